/*  drv_ctl_get — droverctl get: groups, pipelines (of a group or all) with
    their status, or one pipeline: its status row, or with -o yaml|json the
    PUT body {pipeline: spec} that apply -f takes back unchanged (a no-op). */
#include "drv_ctl_commands.h"
#include "drv_ctl_table.h"

#include <stdio.h>
#include <string.h>

//  get GROUP/PIPELINE
static int s_get_pipeline(drv_ctl_t *ctl, const char *target)
{
    char group[128], pipeline[128], path[400];
    if (drv_ctl_split_target(target, group, pipeline, sizeof group)) {
        return DRV_CTL_USAGE;
    }
    snprintf(path, sizeof path, "/api/v1/groups/%s/pipelines/%s", group, pipeline);
    json_t *body;
    int rc = drv_ctl_call(ctl, "GET", path, NULL, NULL, &body);
    if (rc) {
        return rc;
    }
    if (ctl->json) {
        //  Named in the document, so that apply -f takes it back with no name typed.
        char name[300];
        snprintf(name, sizeof name, "%s/%s", group, pipeline);
        json_t *spec = json_pack("{s:s, s:O}", "name", name, "pipeline", json_object_get(body, "spec"));
        json_decref(body);
        return drv_ctl_print_json(ctl, spec);
    }
    drv_ctl_table_t *table = drv_ctl_table_new(drv_ctl_pipeline_columns);
    char name[300];
    snprintf(name, sizeof name, "%s:%s", group, pipeline);
    drv_ctl_pipeline_row(table, name, json_object_get(body, "status"));
    drv_ctl_table_print(table, stdout);
    drv_ctl_table_destroy(&table);
    json_decref(body);
    return DRV_CTL_OK;
}

int drv_ctl_get(drv_ctl_t *ctl, int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "droverctl: get what? groups | pipelines [GROUP] | [pipeline] GROUP/PIPELINE\n");
        return DRV_CTL_USAGE;
    }
    if (!strcmp(argv[1], "pipeline") || (strcmp(argv[1], "groups") && strcmp(argv[1], "pipelines"))) {
        return s_get_pipeline(ctl, !strcmp(argv[1], "pipeline") ? argv[2] : argv[1]);
    }
    json_t *body;
    int rc;
    if (!strcmp(argv[1], "groups")) {
        rc = drv_ctl_call(ctl, "GET", "/api/v1/groups", NULL, NULL, &body);
        if (rc || ctl->json) {
            return rc ? rc : drv_ctl_print_json(ctl, body);
        }
        drv_ctl_table_t *table = drv_ctl_table_new((const char *[]){"GROUP", "PIPELINES", NULL});
        size_t i;
        json_t *g;
        json_array_foreach(body, i, g)
        {
            char names[512] = "";
            size_t k;
            json_t *name;
            json_array_foreach(json_object_get(g, "pipelines"), k, name)
            {
                size_t used = strlen(names);
                snprintf(names + used, sizeof names - used, "%s%s", k ? "," : "", json_string_value(name));
            }
            drv_ctl_table_add(table, drv_ctl_str(g, "name"), names[0] ? names : "-");
        }
        drv_ctl_table_print(table, stdout);
        drv_ctl_table_destroy(&table);
        json_decref(body);
        return DRV_CTL_OK;
    }
    char path[300];
    if (argc >= 3) {
        snprintf(path, sizeof path, "/api/v1/groups/%s/pipelines", argv[2]);
        rc = drv_ctl_call(ctl, "GET", path, NULL, NULL, &body);
        if (rc || ctl->json) {
            return rc ? rc : drv_ctl_print_json(ctl, body);
        }
        drv_ctl_table_t *table = drv_ctl_table_new(drv_ctl_pipeline_columns);
        size_t i;
        json_t *st;
        json_array_foreach(body, i, st)
        {
            char name[200];
            snprintf(name, sizeof name, "%s:%s", drv_ctl_str(st, "group"), drv_ctl_str(st, "pipeline"));
            drv_ctl_pipeline_row(table, name, st);
        }
        drv_ctl_table_print(table, stdout);
        drv_ctl_table_destroy(&table);
        json_decref(body);
        return DRV_CTL_OK;
    }
    return drv_ctl_status(ctl, argc, argv); // every pipeline of every group
}
