/*  drv_ctl_commands — what each droverctl subcommand asks and how it prints.
    Human tables by default; -o json prints the engine's JSON as it came.
    Every command exits non-zero with the engine's own error message when the
    engine says no. */
#include "drv_ctl_commands.h"
#include "drv_ctl_table.h"

#include "drover/drv_yaml.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int s_targets(drv_ctl_t *ctl, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    json_t *body;
    int rc = drv_ctl_call(ctl, "GET", "/status", NULL, NULL, &body);
    if (rc) {
        return rc;
    }
    const char *key;
    json_t *st;
    json_object_foreach(json_object_get(body, "pipelines"), key, st)
    {
        printf("%s/%s\n", drv_ctl_str(st, "group"), drv_ctl_str(st, "pipeline"));
    }
    json_decref(body);
    return DRV_CTL_OK;
}

//  --dry-run of a command that changes something the API has no dry run
//  for: what it would act on is asked for (so a wrong name fails as the
//  real command would) and said; nothing is changed.
static int s_dry_run(drv_ctl_t *ctl, const char *verb, const char *path, const char *what)
{
    json_t *body;
    int rc = drv_ctl_call(ctl, "GET", path, NULL, NULL, &body);
    if (rc) {
        return rc;
    }
    printf("dry run: would %s %s", verb, what);
    if (json_object_get(body, "generation")) {
        printf(" (generation %lld, %s)", (long long)json_integer_value(json_object_get(body, "generation")),
               drv_ctl_str(body, "phase"));
    }
    printf("; nothing was done\n");
    json_decref(body);
    return DRV_CTL_OK;
}

static int s_group_change(drv_ctl_t *ctl, int argc, char **argv, const char *method, const char *done, bool dry_run)
{
    if (argc < 3 || strcmp(argv[1], "group")) {
        fprintf(stderr, "droverctl: usage: droverctl %s group NAME [--dry-run]\n", argv[0]);
        return DRV_CTL_USAGE;
    }
    char path[300];
    snprintf(path, sizeof path, "/api/v1/groups/%s", argv[2]);
    if (dry_run) {
        char what[300];
        snprintf(what, sizeof what, "group %s", argv[2]);
        if (!strcmp(method, "PUT")) { // creating needs nothing to exist: it is idempotent
            printf("dry run: would create %s (nothing is changed if it exists); nothing was done\n", what);
            return DRV_CTL_OK;
        }
        return s_dry_run(ctl, "delete", path, what);
    }
    json_t *body;
    int rc = drv_ctl_call(ctl, method, path, NULL, NULL, &body);
    if (rc || ctl->json) {
        return rc ? rc : drv_ctl_print_json(ctl, body);
    }
    printf("group %s %s\n", argv[2], done);
    json_decref(body);
    return DRV_CTL_OK;
}

static bool s_flag(int argc, char **argv, const char *flag)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], flag)) {
            return true;
        }
    }
    return false;
}

//  Takes the flags (main has checked them) out of argv: what is left are the
//  command and its positional arguments, in order.
static int s_without_flags(int argc, char **argv)
{
    int kept = 1;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] != '-' || !argv[i][1]) {
            argv[kept++] = argv[i];
        }
    }
    return kept;
}

static int s_stop(drv_ctl_t *ctl, int argc, char **argv, bool forget)
{
    bool no_wait = s_flag(argc, argv, "--no-wait"), dry_run = s_flag(argc, argv, "--dry-run");
    argc = s_without_flags(argc, argv);
    if (argc < 2) {
        fprintf(stderr, "droverctl: usage: droverctl %s %s\n", argv[0],
                forget ? "group NAME | GROUP/PIPELINE [--no-wait] [--dry-run]"
                       : "GROUP/PIPELINE [--no-wait] [--dry-run]");
        return DRV_CTL_USAGE;
    }
    if (forget && !strcmp(argv[1], "group")) {
        return s_group_change(ctl, argc, argv, "DELETE", "deleted", dry_run);
    }
    if (dry_run) {
        char group[128], pipeline[128], path[500];
        if (drv_ctl_split_target(argv[1], group, pipeline, sizeof group)) {
            return DRV_CTL_USAGE;
        }
        snprintf(path, sizeof path, "/api/v1/groups/%s/pipelines/%s/status", group, pipeline);
        return s_dry_run(ctl, forget ? "shut down and delete" : "shut down", path, argv[1]);
    }
    return drv_ctl_stop_pipeline(ctl, argv[1], forget, no_wait);
}

static int s_shutdown(drv_ctl_t *ctl, int argc, char **argv)
{
    return s_stop(ctl, argc, argv, false);
}

static int s_create(drv_ctl_t *ctl, int argc, char **argv)
{
    bool dry_run = s_flag(argc, argv, "--dry-run");
    argc = s_without_flags(argc, argv);
    return s_group_change(ctl, argc, argv, "PUT", "created", dry_run);
}

static int s_delete(drv_ctl_t *ctl, int argc, char **argv)
{
    return s_stop(ctl, argc, argv, true);
}

static int s_health(drv_ctl_t *ctl, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    json_t *live, *ready;
    int rc = drv_ctl_call(ctl, "GET", "/livez", NULL, NULL, &live);
    if (rc) {
        return rc;
    }
    rc = drv_ctl_call(ctl, "GET", "/readyz", NULL, NULL, &ready);
    if (rc) {
        json_decref(live);
        return rc;
    }
    bool is_ready = json_is_true(json_object_get(ready, "ready"));
    if (ctl->json) {
        json_t *both = json_pack("{s:b, s:O}", "live", 1, "ready", ready);
        drv_ctl_print_json(ctl, both);
    } else {
        printf("live:  yes\nready: %s\n", is_ready ? "yes" : "no");
        size_t i;
        json_t *reason;
        json_array_foreach(json_object_get(ready, "reasons"), i, reason)
        {
            printf("  - %s\n", json_string_value(reason));
        }
    }
    json_decref(live);
    json_decref(ready);
    return is_ready ? DRV_CTL_OK : DRV_CTL_SERVER_ERROR;
}

static int s_metrics(drv_ctl_t *ctl, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    json_t *body;
    int rc = drv_ctl_call(ctl, "GET", "/metrics", NULL, NULL, &body);
    return rc ? rc : drv_ctl_print_json(ctl, body);
}

static int s_call_raw(drv_ctl_t *ctl, int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "droverctl: usage: droverctl call METHOD PATH [JSON-BODY]\n");
        return DRV_CTL_USAGE;
    }
    json_t *request_body = NULL;
    if (argc >= 4) {
        json_error_t jerr;
        request_body = json_loads(argv[3], JSON_DECODE_ANY, &jerr);
        if (!request_body) {
            fprintf(stderr, "droverctl: body is not JSON: %s\n", jerr.text);
            return DRV_CTL_USAGE;
        }
    }
    json_t *body;
    int rc = drv_ctl_call(ctl, argv[1], argv[2], NULL, request_body, &body);
    json_decref(request_body);
    return rc ? rc : drv_ctl_print_json(ctl, body);
}

const drv_ctl_command_t drv_ctl_commands[] = {
    {"status", "", "every pipeline: phase, generation, ready cores, counters (-w: every 2 s)", drv_ctl_status, "", 0},
    {"get", "groups | pipelines [GROUP] | [pipeline] GROUP/PIPELINE",
     "list groups, pipelines with their status, or one pipeline (-o yaml: its spec, for apply -f)", drv_ctl_get, "", 2},
    {"describe", "GROUP/PIPELINE", "one pipeline: conditions and instances", drv_ctl_describe, "", 1},
    {"apply", "-f SPEC.yaml [GROUP/PIPELINE] [--dry-run[=instantiate]] [--no-wait]",
     "create or change a pipeline, following the rollout core by core", drv_ctl_apply,
     "-f= --dry-run --dry-run=true --dry-run=instantiate --no-wait", 1},
    {"diff", "-f SPEC.yaml [GROUP/PIPELINE]", "what apply -f would change (exit 0: nothing, 1: something)",
     drv_ctl_diff, "-f=", 1},
    {"rollout",
     "status|history [--all]|undo [--to ROLLOUT-ID]|pause|resume|promote|abort GROUP/PIPELINE [ROLLOUT-ID] [--dry-run]",
     "a rollout's progress, the history, roll back; steer the one under way", drv_ctl_rollout, "--all --to= --dry-run",
     3},
    {"shutdown", "GROUP/PIPELINE [--no-wait] [--dry-run]", "drain and stop a pipeline (PUT brings it back)", s_shutdown,
     "--no-wait --dry-run", 1},
    {"create", "group NAME [--dry-run]", "create a group (idempotent)", s_create, "--dry-run", 2},
    {"delete", "group NAME | GROUP/PIPELINE [--no-wait] [--dry-run]",
     "delete an empty group, or shut down and forget a pipeline", s_delete, "--no-wait --dry-run", 2},
    {"explain", "[TYPE | TYPE.KEY | SPEC.PATH] [--markdown]", "node types, keys and defaults (offline)",
     drv_ctl_explain, "--markdown", 1},
    {"crd", "", "the DroverPipeline CustomResourceDefinition, from the node schemas (offline)", drv_ctl_crd, "", 0},
    {"validate", "-f FILE", "check a PipelineSpec or a config file offline, with the engine's messages",
     drv_ctl_validate, "-f=", 0},
    {"health", "", "liveness and readiness, with reasons; exit 1 when not ready", s_health, "", 0},
    {"metrics", "", "the Prometheus metrics text", s_metrics, "", 0},
    {"events", "[--no-history] [--count N] [--for SECS] [--events ENDPOINT] [TOPIC-PREFIX...]",
     "the kept events, then each as it happens (--no-history: only new ones)", drv_ctl_events,
     "--no-history --count= --for= --events=", -1},
    {"tap", "GROUP/PIPELINE [--node N] [--generation G] [--limit K] [--for SECS]",
     "print a sample of the records leaving a node (default: the receivers), one JSON line each; --generation: "
     "that generation's instances only (a canary's)",
     drv_ctl_tap, "--node= --generation= --limit= --for=", 1},
    {"call", "METHOD PATH [JSON-BODY]", "any admin route, raw", s_call_raw, "", 3},
    {"version", "", "client, engine and each process's version", drv_ctl_version, "", 0},
    {"upgrade", "[--no-wait]", "replace droverd and every process with the binaries on disk, while serving",
     drv_ctl_upgrade, "--no-wait", 0},
    {"opamp", "", "the OpAMP agent: server, connection, the last remote config and what became of it", drv_ctl_opamp,
     "", 0},
    {"completion", "bash", "print the bash completion script: source <(droverctl completion bash)", drv_ctl_completion,
     "", 1},
    {"__targets", "", "GROUP/PIPELINE of every pipeline, one a line (for completion)", s_targets, "", 0},
    {NULL, NULL, NULL, NULL, NULL, 0},
};
