/*  drv_ctl_rollout — droverctl's mutating commands: apply, rollout
    status|history|undo, shutdown, delete of a pipeline. apply and undo start
    the rollout without waiting and then follow it, printing each core's
    progress as it changes, like `kubectl rollout status`. */
#include "drv_ctl_commands.h"
#include "drv_ctl_table.h"

#include "drover/drv_yaml.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define FOLLOW_POLL_MS 50


static void s_print_plan(json_t *rollout)
{
    printf("%s: %s of %s/%s to generation %lld, %zu steps\n", drv_ctl_str(rollout, "rollout_id"), drv_ctl_str(rollout, "action"),
           drv_ctl_str(rollout, "group"), drv_ctl_str(rollout, "pipeline"),
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
        printf("  %2lld. %-10s core %lld generation %lld\n", (long long)json_integer_value(json_object_get(step, "step")),
               drv_ctl_str(step, "op"), (long long)json_integer_value(json_object_get(step, "core")),
               (long long)json_integer_value(json_object_get(step, "generation")));
    }
}

//  Polls a rollout until it ends, printing every change of a core's state.
//  Returns the exit code: 0 succeeded, 1 otherwise.
static int s_follow(drv_ctl_t *ctl, const char *location, json_t *first)
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
        if (!ctl->json && (!json_object_get(seen, "state") ||
                           strcmp(json_string_value(json_object_get(seen, "state")), state))) {
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
        s_print_plan(rollout);
        if (dry_run) {
            printf("(dry run: %snothing changed)\n",
                   json_is_true(json_object_get(rollout, "instantiated"))
                       ? "built in a throwaway instance, it would start; "
                       : "");
        }
        json_decref(rollout);
        return DRV_CTL_OK;
    }
    if (!ctl->json) {
        s_print_plan(rollout);
    }
    rc = s_follow(ctl, location, rollout);
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
        fprintf(stderr, "droverctl: which pipeline? %s names none: give GROUP/PIPELINE (or a name: in the file, "
                        "as get -o yaml writes it)\n", file);
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

int drv_ctl_diff(drv_ctl_t *ctl, int argc, char **argv)
{
    const char *file = NULL, *target = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-f") && i + 1 < argc) {
            file = argv[++i];
        } else {
            target = argv[i];
        }
    }
    char path[400];
    json_t *body = s_load_named(file, target, path, sizeof path);
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
    const char *file = NULL, *target = NULL;
    const char *dry_run = NULL;
    bool no_wait = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-f") && i + 1 < argc) {
            file = argv[++i];
        } else if (!strcmp(argv[i], "--dry-run") || !strcmp(argv[i], "--dry-run=true")) {
            dry_run = "true";
        } else if (!strcmp(argv[i], "--dry-run=instantiate")) {
            dry_run = "instantiate";
        } else if (!strcmp(argv[i], "--no-wait")) {
            no_wait = true;
        } else {
            target = argv[i];
        }
    }
    char path[400];
    json_t *body = s_load_named(file, target, path, sizeof path);
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
                   !strcmp(state, "paused") && !strcmp(drv_ctl_str(body, "paused_by"), "canary")
                       ? "holding (canary)"
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
            s_print_plan(body);
            printf("nothing was done\n");
            json_decref(body);
            return DRV_CTL_OK;
        }
        s_print_plan(body);
        char location[500];
        snprintf(location, sizeof location, "/api/v1/groups/%s/pipelines/%s/rollouts/%s", group, pipeline,
                 drv_ctl_str(body, "rollout_id"));
        rc = s_follow(ctl, location, body);
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
                s_print_plan(rollout);
            }
            rc = s_follow(ctl, location, rollout);
            json_decref(rollout);
            return rc;
        }
        if (ctl->json) {
            return drv_ctl_print_json(ctl, rollout);
        }
        printf("%s: %s to generation %lld: %s", drv_ctl_str(rollout, "rollout_id"), drv_ctl_str(rollout, "action"),
               (long long)json_integer_value(json_object_get(rollout, "target_generation")), drv_ctl_str(rollout, "state"));
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
        drv_ctl_table_t *table =
            drv_ctl_table_new((const char *[]){"  CORE", "FROM", "TO", "STATE", "DETAIL", NULL});
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
        drv_ctl_table_t *table = drv_ctl_table_new(
            (const char *[]){"ROLLOUT", "ACTION", "GENERATION", "STATE", "STARTED", "FAILURE", NULL});
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
                snprintf(gen, sizeof gen, "%lld", (long long)json_integer_value(json_object_get(r, "target_generation")));
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
    fprintf(stderr, "droverctl: unknown rollout command \"%s\": status, history, undo, pause, resume, promote or abort\n",
            argv[1]);
    return DRV_CTL_USAGE;
}

//  shutdown GROUP/PIPELINE, and delete GROUP/PIPELINE (shut down and forget).
//  Polls a shutdown until it ends (the engine's drain timeout bounds it),
//  saying once what it waits for; *body becomes its last status.
static int s_follow_shutdown(drv_ctl_t *ctl, const char *group, const char *pipeline, json_t **body)
{
    char location[500];
    snprintf(location, sizeof location, "/api/v1/groups/%s/pipelines/%s/shutdowns/%s", group, pipeline,
             drv_ctl_str(*body, "shutdown_id"));
    bool said = false;
    int64_t started = zclock_mono(); // czmq's monotonic ms, as droverctl's other waits
    while (!strcmp(drv_ctl_str(*body, "state"), "running")) {
        if (!said && !ctl->json && zclock_mono() - started >= 1000) {
            fprintf(stderr, "droverctl: waiting for %s/%s to drain (each instance gets the pipeline's drain "
                            "timeout; --no-wait returns at once)\n", group, pipeline);
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
        rc = s_follow_shutdown(ctl, group, pipeline, &body);
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
        printf("  %-28s %-9s %s\n", drv_ctl_str(core, "instance"), drv_ctl_str(core, "state"), drv_ctl_str(core, "detail"));
    }
    json_decref(body);
    return DRV_CTL_OK;
}
