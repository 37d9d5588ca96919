/*  drv_ctl_follow — droverctl watching what the engine does after a
    change: a rollout's plan, then each core's progress as it changes (like
    `kubectl rollout status`), and a shutdown until its drain is over. */
#include "drv_ctl_commands.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define FOLLOW_POLL_MS 50 // a client polling its server: pacing, not synchronisation

void drv_ctl_print_plan(json_t *rollout)
{
    printf("%s: %s of %s/%s to generation %lld, %zu steps\n", drv_ctl_str(rollout, "rollout_id"),
           drv_ctl_str(rollout, "action"), drv_ctl_str(rollout, "group"), drv_ctl_str(rollout, "pipeline"),
           (long long)json_integer_value(json_object_get(rollout, "target_generation")),
           json_array_size(json_object_get(rollout, "plan")));
    size_t i;
    json_t *step;
    json_array_foreach(json_object_get(rollout, "plan"), i, step)
    {
        if (!strcmp(drv_ctl_str(step, "op"), "hold")) {
            printf("  %2lld. %-10s the canary, until its verdict\n",
                   (long long)json_integer_value(json_object_get(step, "step")), "hold");
            continue;
        }
        printf("  %2lld. %-10s core %lld generation %lld\n",
               (long long)json_integer_value(json_object_get(step, "step")), drv_ctl_str(step, "op"),
               (long long)json_integer_value(json_object_get(step, "core")),
               (long long)json_integer_value(json_object_get(step, "generation")));
    }
}

//  Polls a rollout until it ends, printing every change of a core's state.
//  Returns the exit code: 0 succeeded, 1 otherwise.
int drv_ctl_follow_rollout(drv_ctl_t *ctl, const char *location, json_t *first)
{
    json_t *seen = json_object(); // core -> last state printed
    json_t *rollout = json_incref(first);
    int rc = DRV_CTL_OK;
    for (;;) {
        size_t i;
        json_t *core;
        json_array_foreach(json_object_get(rollout, "cores"), i, core)
        {
            char key[16];
            snprintf(key, sizeof key, "%lld", (long long)json_integer_value(json_object_get(core, "core")));
            const char *state = drv_ctl_str(core, "state");
            if (!json_object_get(seen, key) || strcmp(json_string_value(json_object_get(seen, key)), state)) {
                json_object_set_new(seen, key, json_string(state));
                if (!ctl->json) {
                    printf("  core %-3s %-13s %s\n", key, state, drv_ctl_str(core, "detail"));
                    fflush(stdout);
                }
            }
        }
        const char *state = drv_ctl_str(rollout, "state");
        if (!ctl->json &&
            (!json_object_get(seen, "state") || strcmp(json_string_value(json_object_get(seen, "state")), state))) {
            if (!strcmp(state, "paused") || !strcmp(state, "rolling_back") ||
                (json_object_get(seen, "state") && !strcmp(state, "running"))) {
                json_t *canary = json_object_get(rollout, "canary");
                bool holding = canary && !strcmp(drv_ctl_str(rollout, "paused_by"), "canary");
                printf("  rollout %s%s%s\n", holding ? "holding (canary)" : state, holding ? " until " : "",
                       holding ? drv_ctl_str(canary, "until") : "");
                fflush(stdout);
            }
            json_object_set_new(seen, "state", json_string(state));
        }
        if (!strcmp(state, "succeeded") || !strcmp(state, "failed") || !strcmp(state, "rollback_failed")) {
            if (ctl->json) {
                drv_ctl_print_json(ctl, json_incref(rollout));
            } else {
                printf("%s %s", drv_ctl_str(rollout, "rollout_id"), state);
                if (json_is_string(json_object_get(rollout, "failure_reason"))) {
                    printf(": %s", drv_ctl_str(rollout, "failure_reason"));
                }
                printf("\n");
            }
            rc = strcmp(state, "succeeded") ? DRV_CTL_SERVER_ERROR : DRV_CTL_OK;
            break;
        }
        usleep(FOLLOW_POLL_MS * 1000); // a client polling its server: pacing, not synchronisation
        json_t *next = NULL;
        rc = drv_ctl_call(ctl, "GET", location, NULL, NULL, &next);
        if (rc) {
            break;
        }
        json_decref(rollout);
        rollout = next;
    }
    json_decref(rollout);
    json_decref(seen);
    return rc;
}

//  Polls a shutdown until it ends (the engine's drain timeout bounds it),
//  saying once what it waits for; *body becomes its last status.
int drv_ctl_follow_shutdown(drv_ctl_t *ctl, const char *group, const char *pipeline, json_t **body)
{
    char location[500];
    snprintf(location, sizeof location, "/api/v1/groups/%s/pipelines/%s/shutdowns/%s", group, pipeline,
             drv_ctl_str(*body, "shutdown_id"));
    bool said = false;
    int64_t started = zclock_mono(); // czmq's monotonic ms, as droverctl's other waits
    while (!strcmp(drv_ctl_str(*body, "state"), "running")) {
        if (!said && !ctl->json && zclock_mono() - started >= 1000) {
            fprintf(stderr,
                    "droverctl: waiting for %s/%s to drain (each instance gets the pipeline's drain "
                    "timeout; --no-wait returns at once)\n",
                    group, pipeline);
            said = true;
        }
        usleep(FOLLOW_POLL_MS * 1000); // a client polling its server: pacing, not synchronisation
        json_t *next = NULL;
        char err[400];
        int status = drv_ctl_request(&ctl->options, "GET", location, NULL, NULL, &next, err, sizeof err);
        if (status == 404) { // a DELETE's record goes with its pipeline: it is done
            json_decref(next);
            json_object_set_new(*body, "state", json_string("succeeded"));
            return DRV_CTL_OK;
        }
        if (status != 200) {
            fprintf(stderr, "droverctl: %s\n", status < 0 ? err : "the shutdown could not be followed");
            json_decref(next);
            return status < 0 ? DRV_CTL_UNREACHABLE : DRV_CTL_SERVER_ERROR;
        }
        json_decref(*body);
        *body = next;
    }
    return DRV_CTL_OK;
}
