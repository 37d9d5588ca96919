/*  drv_ctl_apply — droverctl's changes to a pipeline: apply -f and diff -f
    (a spec from a file, named there or on the command line), shutdown and
    delete. apply starts the rollout without waiting and follows it
    (drv_ctl_follow.c); with several -e, engine after engine. */
#include "drv_ctl_commands.h"

#include <stdio.h>
#include <string.h>

//  One engine: PUT, then follow the rollout (or show the plan).
//  dry_run: NULL, "true" or "instantiate".
static int s_apply_one(drv_ctl_t *ctl, const char *path, json_t *body, const char *dry_run, bool no_wait)
{
    json_t *query = json_pack("{s:s, s:s}", "wait", "false", "dry_run", dry_run ? dry_run : "false");
    json_t *rollout = NULL;
    int rc = drv_ctl_call(ctl, "PUT", path, query, body, &rollout);
    json_decref(query);
    if (rc) {
        return rc;
    }
    char location[500];
    snprintf(location, sizeof location, "%s/rollouts/%s", path, drv_ctl_str(rollout, "rollout_id"));
    if (dry_run || no_wait) {
        if (ctl->json) {
            return drv_ctl_print_json(ctl, rollout);
        }
        drv_ctl_print_plan(rollout);
        if (dry_run) {
            printf("(dry run: %snothing changed)\n", json_is_true(json_object_get(rollout, "instantiated"))
                                                         ? "built in a throwaway instance, it would start; "
                                                         : "");
        }
        json_decref(rollout);
        return DRV_CTL_OK;
    }
    if (!ctl->json) {
        drv_ctl_print_plan(rollout);
    }
    rc = drv_ctl_follow_rollout(ctl, location, rollout);
    json_decref(rollout);
    return rc;
}

//  The PUT body of file and the pipeline's path: the target typed, else
//  the one the document names (get -o yaml's); NULL after saying why.
static json_t *s_load_named(const char *file, const char *target, char *path, size_t size)
{
    char named[300], group[128], pipeline[128];
    json_t *body = file ? drv_ctl_load_spec(file, named, sizeof named) : NULL;
    if (!file) {
        fprintf(stderr, "droverctl: -f SPEC.yaml is needed (droverctl apply --help)\n");
        return NULL;
    }
    if (!body) {
        return NULL;
    }
    if (!target && !named[0]) {
        fprintf(stderr,
                "droverctl: which pipeline? %s names none: give GROUP/PIPELINE (or a name: in the file, "
                "as get -o yaml writes it)\n",
                file);
        json_decref(body);
        return NULL;
    }
    if (drv_ctl_split_target(target ? target : named, group, pipeline, sizeof group)) {
        json_decref(body);
        return NULL;
    }
    char typed[300];
    snprintf(typed, sizeof typed, "%s/%s", group, pipeline);
    if (target && named[0] && strcmp(typed, named) && !(strchr(named, '/') == NULL && !strcmp(pipeline, named))) {
        fprintf(stderr, "droverctl: %s names %s, not %s: nothing was done\n", file, named, typed);
        json_decref(body);
        return NULL;
    }
    snprintf(path, size, "/api/v1/groups/%s/pipelines/%s", group, pipeline);
    return body;
}

//  s_load_named with -f's file and the one argument that is no option
//  (main has checked the options).
static json_t *s_load_args(int argc, char **argv, char *path, size_t size)
{
    const char *file = NULL, *target = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-f") && i + 1 < argc) {
            file = argv[++i];
        } else if (argv[i][0] != '-') {
            target = argv[i];
        }
    }
    return s_load_named(file, target, path, size);
}

int drv_ctl_diff(drv_ctl_t *ctl, int argc, char **argv)
{
    char path[400];
    json_t *body = s_load_args(argc, argv, path, sizeof path);
    if (!body) {
        return DRV_CTL_USAGE;
    }
    json_t *query = json_pack("{s:s}", "dry_run", "true");
    json_t *rollout = NULL;
    int rc = drv_ctl_call(ctl, "PUT", path, query, body, &rollout);
    json_decref(query);
    json_decref(body);
    if (rc) {
        return rc;
    }
    const char *action = drv_ctl_str(rollout, "action");
    bool changes = strcmp(action, "noop") != 0;
    if (ctl->json) {
        drv_ctl_print_json(ctl, json_pack("{s:s, s:b, s:O?}", "action", action, "changes", changes, "diff",
                                          json_object_get(rollout, "changes")));
    } else if (!changes) {
        printf("no changes: the running spec is the file's\n");
    } else if (!strcmp(action, "create")) {
        char group[128] = "", pipeline[128] = "";
        sscanf(path, "/api/v1/groups/%127[^/]/pipelines/%127s", group, pipeline);
        printf("%s/%s does not exist: apply would create it\n", group, pipeline);
    } else {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(rollout, "changes"), i, c)
        {
            char *from = json_dumps(json_object_get(c, "from"), JSON_ENCODE_ANY | JSON_COMPACT);
            char *to = json_dumps(json_object_get(c, "to"), JSON_ENCODE_ANY | JSON_COMPACT);
            printf("%s: %s -> %s\n", drv_ctl_str(c, "path"), from ? from : "(none)", to ? to : "(none)");
            free(from);
            free(to);
            size_t k;
            json_t *line;
            json_array_foreach(json_object_get(c, "diff"), k, line) // a script: its lines
            {
                printf("    %s\n", json_string_value(line));
            }
        }
        printf("(apply would %s it)\n", action);
    }
    json_decref(rollout);
    return changes ? DRV_CTL_SERVER_ERROR : DRV_CTL_OK; // exit 1: there are changes (as diff(1) says)
}

//  Several -e: the same change on each engine in turn, each rollout followed
//  to its end before the next engine is touched; the first that fails (or
//  cannot be reached) stops the walk, leaving the rest as they were.
int drv_ctl_apply(drv_ctl_t *ctl, int argc, char **argv)
{
    const char *dry_run = NULL;
    bool no_wait = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dry-run") || !strcmp(argv[i], "--dry-run=true")) {
            dry_run = "true";
        } else if (!strcmp(argv[i], "--dry-run=instantiate")) {
            dry_run = "instantiate";
        } else if (!strcmp(argv[i], "--no-wait")) {
            no_wait = true;
        }
    }
    char path[400];
    json_t *body = s_load_args(argc, argv, path, sizeof path);
    if (!body) {
        return DRV_CTL_USAGE;
    }
    int rc = DRV_CTL_OK;
    for (int i = 0; i < ctl->endpoint_count; i++) {
        ctl->options.endpoint = ctl->endpoints[i];
        if (ctl->endpoint_count > 1 && !ctl->json) {
            printf("==> %s (%d/%d)\n", ctl->endpoints[i], i + 1, ctl->endpoint_count);
            fflush(stdout);
        }
        rc = s_apply_one(ctl, path, body, dry_run, no_wait);
        if (rc && ctl->endpoint_count > 1) {
            fprintf(stderr, "droverctl: apply stopped at %s (%d/%d); %d later engine(s) not changed\n",
                    ctl->endpoints[i], i + 1, ctl->endpoint_count, ctl->endpoint_count - i - 1);
            break;
        }
    }
    json_decref(body);
    return rc;
}

//  shutdown GROUP/PIPELINE, and delete GROUP/PIPELINE (shut down and forget).
int drv_ctl_stop_pipeline(drv_ctl_t *ctl, const char *target, bool forget, bool no_wait)
{
    char group[128], pipeline[128], path[500];
    if (drv_ctl_split_target(target, group, pipeline, sizeof group)) {
        return DRV_CTL_USAGE;
    }
    if (forget) {
        snprintf(path, sizeof path, "/api/v1/groups/%s/pipelines/%s", group, pipeline);
    } else {
        snprintf(path, sizeof path, "/api/v1/groups/%s/pipelines/%s/shutdown", group, pipeline);
    }
    //  Asked without waiting, then followed: a drain may take longer than
    //  one answer may (-t), and the wait is then said for what it is.
    json_t *query = json_pack("{s:s}", "wait", "false");
    json_t *body = NULL;
    int rc = drv_ctl_call(ctl, forget ? "DELETE" : "POST", path, query, NULL, &body);
    json_decref(query);
    if (!rc && !no_wait) {
        rc = drv_ctl_follow_shutdown(ctl, group, pipeline, &body);
    }
    if (rc || ctl->json) {
        return rc ? rc : drv_ctl_print_json(ctl, body);
    }
    printf("%s: %s/%s %s\n", drv_ctl_str(body, "shutdown_id"), group, pipeline,
           !strcmp(drv_ctl_str(body, "state"), "succeeded") ? (forget ? "stopped and deleted" : "stopped")
                                                            : drv_ctl_str(body, "state"));
    size_t i;
    json_t *core;
    json_array_foreach(json_object_get(body, "cores"), i, core)
    {
        printf("  %-28s %-9s %s\n", drv_ctl_str(core, "instance"), drv_ctl_str(core, "state"),
               drv_ctl_str(core, "detail"));
    }
    json_decref(body);
    return DRV_CTL_OK;
}
