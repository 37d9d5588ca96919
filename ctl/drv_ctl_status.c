/*  drv_ctl_status — what runs, as droverctl shows it: status (every
    pipeline a row, -w again every 2 s), describe (one pipeline: conditions
    and instances), and the row get shares. Counters are the pipeline's own
    totals, never reset by a replace, a resize or a crash: what /metrics and
    the console show. */
#include "drv_ctl_commands.h"
#include "drv_ctl_table.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define WATCH_MS 2000 // status -w: how often it asks

static char *s_fmt(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static char *s_fmt(char *buf, size_t size, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(buf, size, fmt, args);
    va_end(args);
    return buf;
}

static void s_cores(json_t *cores, char *buf, size_t size)
{
    buf[0] = 0;
    size_t i;
    json_t *core;
    json_array_foreach(cores, i, core)
    {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s%lld", i ? "," : "", (long long)json_integer_value(core));
    }
}

//  Sums an instance counter over a PipelineStatus.
static long long s_sum(json_t *status, const char *key)
{
    long long total = 0;
    size_t i;
    json_t *inst;
    json_array_foreach(json_object_get(status, "instances"), i, inst)
    {
        total += json_integer_value(json_object_get(inst, key));
    }
    return total;
}

//  The pipeline's own total (never reset by a replace, a resize or a crash:
//  what /metrics and the console show), else the instances' sum.
static long long s_total(json_t *status, const char *key)
{
    json_t *total = json_object_get(json_object_get(status, "totals"), key);
    return json_is_integer(total) ? (long long)json_integer_value(total) : s_sum(status, key);
}

void drv_ctl_pipeline_row(drv_ctl_table_t *table, const char *name, json_t *st)
{
    char gen[24], ready[32], cores[128], restarts[24], in[24], out[24], errors[24];
    s_cores(json_object_get(st, "desired_cores"), cores, sizeof cores);
    drv_ctl_table_add(table, name, drv_ctl_str(st, "phase"),
                      s_fmt(gen, sizeof gen, "%lld", (long long)json_integer_value(json_object_get(st, "generation"))),
                      s_fmt(ready, sizeof ready, "%lld/%zu",
                            (long long)json_integer_value(json_object_get(st, "ready_instances")),
                            json_array_size(json_object_get(st, "desired_cores"))),
                      cores, s_fmt(restarts, sizeof restarts, "%lld", s_sum(st, "restarts")),
                      s_fmt(in, sizeof in, "%lld", s_total(st, "records_in")),
                      s_fmt(out, sizeof out, "%lld", s_total(st, "records_out")),
                      s_fmt(errors, sizeof errors, "%lld", s_total(st, "errors")), drv_ctl_str(st, "source"));
}

const char *const drv_ctl_pipeline_columns[] = {"PIPELINE",   "PHASE",       "GEN",    "READY",  "ON_CORES", "RESTARTS",
                                                "RECORDS_IN", "RECORDS_OUT", "ERRORS", "SOURCE", NULL};

//  Every pipeline, once.
static int s_status_once(drv_ctl_t *ctl)
{
    json_t *body;
    int rc = drv_ctl_call(ctl, "GET", "/status", NULL, NULL, &body);
    if (rc || ctl->json) {
        if (!rc && ctl->watch) {
            char *line = json_dumps(body, JSON_COMPACT); // one document per line while watching
            printf("%s\n", line);
            free(line);
            json_decref(body);
            return DRV_CTL_OK;
        }
        return rc ? rc : drv_ctl_print_json(ctl, body);
    }
    drv_ctl_table_t *table = drv_ctl_table_new(drv_ctl_pipeline_columns);
    const char *key;
    json_t *st;
    json_object_foreach(json_object_get(body, "pipelines"), key, st)
    {
        drv_ctl_pipeline_row(table, key, st);
    }
    if (ctl->watch) {
        printf("-- %s\n", drv_ctl_str(body, "generated_at"));
    }
    drv_ctl_table_print(table, stdout);
    drv_ctl_table_destroy(&table);
    json_decref(body);
    fflush(stdout);
    return DRV_CTL_OK;
}

//  -w: again every WATCH_MS until interrupted (or the engine stops answering).
int drv_ctl_status(drv_ctl_t *ctl, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    for (;;) {
        int rc = s_status_once(ctl);
        if (rc || !ctl->watch) {
            return rc;
        }
        usleep(WATCH_MS * 1000); // a client polling its server: pacing, not synchronisation
    }
}

int drv_ctl_describe(drv_ctl_t *ctl, int argc, char **argv)
{
    char group[128], pipeline[128], path[400];
    if (argc < 2 || drv_ctl_split_target(argv[1], group, pipeline, sizeof group)) {
        return DRV_CTL_USAGE;
    }
    snprintf(path, sizeof path, "/api/v1/groups/%s/pipelines/%s", group, pipeline);
    json_t *body;
    int rc = drv_ctl_call(ctl, "GET", path, NULL, NULL, &body);
    if (rc || ctl->json) {
        return rc ? rc : drv_ctl_print_json(ctl, body);
    }
    json_t *st = json_object_get(body, "status");
    char cores[128];
    s_cores(json_object_get(st, "desired_cores"), cores, sizeof cores);
    printf("Pipeline:    %s/%s\n", drv_ctl_str(st, "group"), drv_ctl_str(st, "pipeline"));
    printf("Phase:       %s\n", drv_ctl_str(st, "phase"));
    printf("Generation:  %lld\n", (long long)json_integer_value(json_object_get(st, "generation")));
    printf("Spec hash:   %s\n", drv_ctl_str(st, "spec_hash"));
    printf("Cores:       %s (%lld ready)\n", cores,
           (long long)json_integer_value(json_object_get(st, "ready_instances")));
    printf("Conditions:\n");
    drv_ctl_table_t *table =
        drv_ctl_table_new((const char *[]){"  TYPE", "STATUS", "REASON", "SINCE", "MESSAGE", NULL});
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(st, "conditions"), i, c)
    {
        char type[64];
        drv_ctl_table_add(table, s_fmt(type, sizeof type, "  %s", drv_ctl_str(c, "type")),
                          json_is_true(json_object_get(c, "status")) ? "true" : "false", drv_ctl_str(c, "reason"),
                          drv_ctl_str(c, "since"), drv_ctl_str(c, "message"));
    }
    drv_ctl_table_print(table, stdout);
    drv_ctl_table_destroy(&table);
    printf("Instances:\n");
    table = drv_ctl_table_new((const char *[]){"  ID", "STATE", "PID", "RESTARTS", "RECORDS_IN", "RECORDS_OUT",
                                               "ERRORS", "LAST_HEARTBEAT", "DETAIL", NULL});
    json_array_foreach(json_object_get(st, "instances"), i, c)
    {
        char id[200], pid[24], restarts[24], in[24], out[24], errors[24];
        json_t *p = json_object_get(c, "pid");
        drv_ctl_table_add(
            table, s_fmt(id, sizeof id, "  %s", drv_ctl_str(c, "id")), drv_ctl_str(c, "state"),
            json_is_integer(p) ? s_fmt(pid, sizeof pid, "%lld", (long long)json_integer_value(p)) : "-",
            s_fmt(restarts, sizeof restarts, "%lld", (long long)json_integer_value(json_object_get(c, "restarts"))),
            s_fmt(in, sizeof in, "%lld", (long long)json_integer_value(json_object_get(c, "records_in"))),
            s_fmt(out, sizeof out, "%lld", (long long)json_integer_value(json_object_get(c, "records_out"))),
            s_fmt(errors, sizeof errors, "%lld", (long long)json_integer_value(json_object_get(c, "errors"))),
            drv_ctl_str(c, "last_heartbeat_at"), drv_ctl_str(c, "detail")[0] ? drv_ctl_str(c, "detail") : "-");
    }
    drv_ctl_table_print(table, stdout);
    drv_ctl_table_destroy(&table);
    json_decref(body);
    return DRV_CTL_OK;
}
