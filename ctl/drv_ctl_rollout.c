/*  drv_ctl_rollout — droverctl rollout status|history|undo and the
    controls of the rollout under way (pause, resume, promote, abort). undo
    starts the rollback without waiting and follows it (drv_ctl_follow.c). */
#include "drv_ctl_commands.h"
#include "drv_ctl_table.h"

#include <stdio.h>
#include <string.h>

//  rollout's own options, taken out of argv (main has checked them): what
//  is left is the subcommand, the target and a rollout id.
static int s_rollout_options(int argc, char **argv, bool *all, bool *dry_run, const char **to)
{
    int kept = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--all")) {
            *all = true;
        } else if (!strcmp(argv[i], "--dry-run")) {
            *dry_run = true;
        } else if (!strncmp(argv[i], "--to=", 5)) {
            *to = argv[i] + 5;
        } else if (!strcmp(argv[i], "--to") && i + 1 < argc) {
            *to = argv[++i];
        } else {
            argv[kept++] = argv[i];
        }
    }
    return kept;
}

int drv_ctl_rollout(drv_ctl_t *ctl, int argc, char **argv)
{
    char group[128], pipeline[128], path[500];
    bool all = false, dry_run = false;
    const char *to = NULL;
    argc = s_rollout_options(argc, argv, &all, &dry_run, &to);
    if ((to || dry_run) && argc >= 2 && strcmp(argv[1], "undo") &&
        (!dry_run || !strcmp(argv[1], "status") || !strcmp(argv[1], "history"))) {
        fprintf(stderr, "droverctl: rollout %s does not take %s (nothing was done)\n", argv[1],
                to ? "--to" : "--dry-run");
        return DRV_CTL_USAGE;
    }
    if (argc < 3 || drv_ctl_split_target(argv[2], group, pipeline, sizeof group)) {
        fprintf(stderr, "droverctl: usage: droverctl rollout status|history [--all]|undo|pause|resume|promote|abort "
                        "GROUP/PIPELINE [ROLLOUT-ID]\n");
        return DRV_CTL_USAGE;
    }
    json_t *body = NULL;
    int rc;
    static const char *controls[] = {"pause", "resume", "promote", "abort", NULL};
    for (int c = 0; controls[c]; c++) {
        if (!strcmp(argv[1], controls[c])) {
            if (dry_run) { // the rollout it would steer, asked for and shown; nothing posted
                snprintf(path, sizeof path, "/api/v1/groups/%s/pipelines/%s/rollouts/%s", group, pipeline,
                         argc >= 4 ? argv[3] : "current");
                if ((rc = drv_ctl_call(ctl, "GET", path, NULL, NULL, &body)) != 0) {
                    return rc;
                }
                printf("dry run: would %s %s (%s, %s); nothing was done\n", controls[c],
                       drv_ctl_str(body, "rollout_id"), drv_ctl_str(body, "action"), drv_ctl_str(body, "state"));
                json_decref(body);
                return DRV_CTL_OK;
            }
            snprintf(path, sizeof path, "/api/v1/groups/%s/pipelines/%s/rollouts/%s/%s", group, pipeline,
                     argc >= 4 ? argv[3] : "current", controls[c]);
            rc = drv_ctl_call(ctl, "POST", path, NULL, NULL, &body);
            if (rc || ctl->json) {
                return rc ? rc : drv_ctl_print_json(ctl, body);
            }
            const char *state = drv_ctl_str(body, "state");
            const char *by = drv_ctl_str(json_object_get(body, "canary"), "until");
            printf("%s: %s asked; it is %s", drv_ctl_str(body, "rollout_id"), controls[c],
                   !strcmp(state, "paused") && !strcmp(drv_ctl_str(body, "paused_by"), "canary") ? "holding (canary)"
                                                                                                 : state);
            if (!strcmp(state, "paused") && !strcmp(drv_ctl_str(body, "paused_by"), "canary") && strcmp(by, "-")) {
                printf(" until %s; promote ends the hold now, abort rolls back", by);
            } else if (json_is_true(json_object_get(body, "pause_requested")) && strcmp(state, "paused")) {
                printf(" (pauses after the step under way)");
            } else if (json_is_true(json_object_get(body, "aborted"))) {
                printf(" (aborted: rolling back to the generation before)");
            }
            printf("\n");
            json_decref(body);
            return DRV_CTL_OK;
        }
    }
    if (!strcmp(argv[1], "undo")) {
        if (argc >= 4) {
            fprintf(stderr, "droverctl: rollout undo goes back to a rollout's spec with --to %s (nothing was done)\n",
                    argv[3]);
            return DRV_CTL_USAGE;
        }
        snprintf(path, sizeof path, "/api/v1/groups/%s/pipelines/%s/rollback", group, pipeline);
        json_t *query = json_pack("{s:s, s:s}", "wait", "false", "dry_run", dry_run ? "true" : "false");
        if (to) {
            json_object_set_new(query, "to", json_string(to));
        }
        rc = drv_ctl_call(ctl, "POST", path, query, NULL, &body);
        json_decref(query);
        if (rc || (dry_run && ctl->json)) {
            return rc ? rc : drv_ctl_print_json(ctl, body);
        }
        if (dry_run) {
            printf("dry run: would roll %s/%s back%s%s\n", group, pipeline, to ? " to the spec of " : "",
                   to ? to : " to the previous generation");
            drv_ctl_print_plan(body);
            printf("nothing was done\n");
            json_decref(body);
            return DRV_CTL_OK;
        }
        drv_ctl_print_plan(body);
        char location[500];
        snprintf(location, sizeof location, "/api/v1/groups/%s/pipelines/%s/rollouts/%s", group, pipeline,
                 drv_ctl_str(body, "rollout_id"));
        rc = drv_ctl_follow_rollout(ctl, location, body);
        json_decref(body);
        return rc;
    }
    if (!strcmp(argv[1], "status")) {
        if (argc >= 4) {
            snprintf(path, sizeof path, "/api/v1/groups/%s/pipelines/%s/rollouts/%s", group, pipeline, argv[3]);
        } else {
            snprintf(path, sizeof path, "/api/v1/groups/%s/pipelines/%s/rollouts", group, pipeline);
        }
        rc = drv_ctl_call(ctl, "GET", path, NULL, NULL, &body);
        if (rc) {
            return rc;
        }
        json_t *rollout = json_is_array(body) ? json_incref(json_array_get(body, 0)) : json_incref(body);
        json_decref(body);
        if (!rollout) {
            fprintf(stderr, "droverctl: %s/%s has no rollouts\n", group, pipeline);
            return DRV_CTL_SERVER_ERROR;
        }
        const char *state = drv_ctl_str(rollout, "state");
        if (ctl->watch && strcmp(state, "succeeded") && strcmp(state, "failed") && strcmp(state, "rollback_failed")) {
            //  -w: follow it core by core until it ends, as kubectl rollout status does.
            char location[500];
            snprintf(location, sizeof location, "/api/v1/groups/%s/pipelines/%s/rollouts/%s", group, pipeline,
                     drv_ctl_str(rollout, "rollout_id"));
            if (!ctl->json) {
                drv_ctl_print_plan(rollout);
            }
            rc = drv_ctl_follow_rollout(ctl, location, rollout);
            json_decref(rollout);
            return rc;
        }
        if (ctl->json) {
            return drv_ctl_print_json(ctl, rollout);
        }
        printf("%s: %s to generation %lld: %s", drv_ctl_str(rollout, "rollout_id"), drv_ctl_str(rollout, "action"),
               (long long)json_integer_value(json_object_get(rollout, "target_generation")),
               drv_ctl_str(rollout, "state"));
        if (json_is_string(json_object_get(rollout, "failure_reason"))) {
            printf(" (%s)", drv_ctl_str(rollout, "failure_reason"));
        }
        printf("\nstarted %s, updated %s\n", drv_ctl_str(rollout, "started_at"), drv_ctl_str(rollout, "updated_at"));
        json_t *canary = json_object_get(rollout, "canary");
        if (canary) {
            printf("canary: %lld core(s), hold until %s, verdict %s, error ratio %.4f (new) vs %.4f (old)\n",
                   (long long)json_integer_value(json_object_get(canary, "cores")),
                   json_is_string(json_object_get(canary, "until")) ? drv_ctl_str(canary, "until") : "-",
                   drv_ctl_str(canary, "verdict"), json_real_value(json_object_get(canary, "error_ratio_new")),
                   json_real_value(json_object_get(canary, "error_ratio_old")));
        }
        drv_ctl_table_t *table = drv_ctl_table_new((const char *[]){"  CORE", "FROM", "TO", "STATE", "DETAIL", NULL});
        size_t i;
        json_t *core;
        json_array_foreach(json_object_get(rollout, "cores"), i, core)
        {
            char c[16], from[24], to[24];
            json_t *prev = json_object_get(core, "previous_generation");
            json_t *next = json_object_get(core, "target_generation");
            snprintf(c, sizeof c, "  %lld", (long long)json_integer_value(json_object_get(core, "core")));
            snprintf(from, sizeof from, json_is_integer(prev) ? "%lld" : "-", (long long)json_integer_value(prev));
            snprintf(to, sizeof to, json_is_integer(next) ? "%lld" : "-", (long long)json_integer_value(next));
            drv_ctl_table_add(table, c, from, to, drv_ctl_str(core, "state"), drv_ctl_str(core, "detail"));
        }
        drv_ctl_table_print(table, stdout);
        drv_ctl_table_destroy(&table);
        json_decref(rollout);
        return DRV_CTL_OK;
    }
    if (!strcmp(argv[1], "history")) {
        snprintf(path, sizeof path, "/api/v1/groups/%s/pipelines/%s/rollouts", group, pipeline);
        rc = drv_ctl_call(ctl, "GET", path, NULL, NULL, &body);
        if (rc || ctl->json) {
            return rc ? rc : drv_ctl_print_json(ctl, body);
        }
        drv_ctl_table_t *table =
            drv_ctl_table_new((const char *[]){"ROLLOUT", "ACTION", "GENERATION", "STATE", "STARTED", "FAILURE", NULL});
        size_t i;
        json_t *r;
        int noops = 0;
        json_array_foreach(body, i, r)
        {
            if (!all && !strcmp(drv_ctl_str(r, "action"), "noop")) {
                noops++; // nothing changed: not a revision (kubectl rollout history has none either)
                continue;
            }
            char gen[48], action[64];
            const char *cause = drv_ctl_str(r, "cause");
            snprintf(action, sizeof action, strcmp(cause, "apply") && strcmp(cause, "-") ? "%s (%s)" : "%s",
                     drv_ctl_str(r, "action"), cause);
            json_t *prev = json_object_get(r, "previous_generation");
            if (json_is_integer(prev)) {
                snprintf(gen, sizeof gen, "%lld -> %lld", (long long)json_integer_value(prev),
                         (long long)json_integer_value(json_object_get(r, "target_generation")));
            } else {
                snprintf(gen, sizeof gen, "%lld",
                         (long long)json_integer_value(json_object_get(r, "target_generation")));
            }
            drv_ctl_table_add(table, drv_ctl_str(r, "rollout_id"), action, gen, drv_ctl_str(r, "state"),
                              drv_ctl_str(r, "started_at"), drv_ctl_str(r, "failure_reason"));
        }
        drv_ctl_table_print(table, stdout);
        if (noops > 0) {
            printf("(%d no-op apply%s not shown: nothing changed; --all shows them)\n", noops, noops > 1 ? "s" : "");
        }
        drv_ctl_table_destroy(&table);
        json_decref(body);
        return DRV_CTL_OK;
    }
    fprintf(stderr,
            "droverctl: unknown rollout command \"%s\": status, history, undo, pause, resume, promote or abort\n",
            argv[1]);
    return DRV_CTL_USAGE;
}
