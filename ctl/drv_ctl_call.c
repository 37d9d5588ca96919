/*  drv_ctl_call — one admin call as every command makes it
    (drv_ctl_commands.h): the request, the engine's error said as it said
    it (with the cores a failed rollout reached, and names like a pipeline
    not found), and a body printed as JSON, YAML or text. */
#include "drv_ctl_commands.h"

#include "drover/drv_yaml.h"

#include <stdio.h>
#include <string.h>

//  Performs a request; on error prints the engine's message and returns the
//  exit code; on success stores the body and returns 0.
int drv_ctl_call(drv_ctl_t *ctl, const char *method, const char *path, json_t *query, json_t *body, json_t **out)
{
    char err[400];
    json_t *reply = NULL;
    int status = drv_ctl_request(&ctl->options, method, path, query, body, &reply, err, sizeof err);
    if (status < 0) {
        fprintf(stderr, "droverctl: %s\n", err);
        return DRV_CTL_UNREACHABLE;
    }
    if (status >= 400 && !(status == 503 && !strcmp(path, "/readyz"))) {
        if (json_is_object(json_object_get(reply, "rollout"))) {
            //  A failed rollout: show how far it got before the error line.
            json_t *r = json_object_get(reply, "rollout");
            size_t i;
            json_t *c;
            json_array_foreach(json_object_get(r, "cores"), i, c)
            {
                const char *detail = json_string_value(json_object_get(c, "detail"));
                if (detail && detail[0]) { // a core nothing happened to says nothing
                    fprintf(stderr, "  core %lld %s: %s\n", (long long)json_integer_value(json_object_get(c, "core")),
                            json_string_value(json_object_get(c, "state")), detail);
                }
            }
        }
        json_t *error = json_object_get(reply, "error");
        if (ctl->json) {
            char *text = json_dumps(reply, JSON_INDENT(2));
            printf("%s\n", text);
            free(text);
        }
        fprintf(stderr, "droverctl: %d %s: %s\n", status, json_string_value(json_object_get(error, "kind")) ?: "error",
                json_string_value(json_object_get(error, "message")) ?: "(no message)");
        json_t *details = json_object_get(error, "details");
        size_t i;
        json_t *d;
        json_array_foreach(details, i, d)
        {
            fprintf(stderr, "  %s: %s\n", json_string_value(json_object_get(d, "path")),
                    json_string_value(json_object_get(d, "message")));
        }
        //  Names are guessed only when the name was what was not found: a
        //  pipeline with no rollout under way is there (rollout_not_found).
        const char *kind = json_string_value(json_object_get(error, "kind")) ?: "";
        char group[128], pipeline[128];
        if (status == 404 && (!strcmp(kind, "pipeline_not_found") || !strcmp(kind, "group_not_found")) &&
            sscanf(path, "/api/v1/groups/%127[^/]/pipelines/%127[^/?]", group, pipeline) == 2) {
            drv_ctl_suggest_pipelines(ctl, group, pipeline);
        }
        json_decref(reply);
        return DRV_CTL_SERVER_ERROR;
    }
    *out = reply;
    return DRV_CTL_OK;
}

int drv_ctl_print_json(drv_ctl_t *ctl, json_t *body)
{
    if (json_is_string(body)) {
        fputs(json_string_value(body), stdout);
    } else if (ctl->yaml) {
        char *text = drv_yaml_emit(body);
        fputs(text ? text : "", stdout);
        free(text);
    } else {
        char *text = json_dumps(body, JSON_INDENT(2) | JSON_ENCODE_ANY);
        printf("%s\n", text);
        free(text);
    }
    json_decref(body);
    return DRV_CTL_OK;
}
