/*  drv_metrics — Prometheus text exposition (format 0.0.4) of the registry.
    Per-instance and per-node counters are the worker's own since its
    process started, so they reset on a restart (Prometheus' rate() handles
    counter resets); the drover_pipeline_*_total ones add what ended
    processes counted, so a replace never resets them. */
#include "drv_metrics.h"
#include "drv_registry.h"
#include "drv_broker_link.h"
#include "drv_status.h"
#include "drv_state.h"
#include "drv_sse.h"

#include "drover/drv_node_counters.h"
#include "drover/drv_time.h"
#include "drover/drv_version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *data;
    size_t len;
    size_t capacity;
} text_t;

static void s_printf(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void s_printf(text_t *t, const char *fmt, ...)
{
    for (;;) {
        va_list args;
        va_start(args, fmt);
        int n = vsnprintf(t->data + t->len, t->capacity - t->len, fmt, args);
        va_end(args);
        if (n >= 0 && (size_t)n < t->capacity - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->capacity = t->capacity * 2 + (size_t)(n > 0 ? n : 0) + 4096;
        t->data = realloc(t->data, t->capacity);
    }
}

static void s_header(text_t *t, const char *name, const char *type, const char *help)
{
    s_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

typedef int64_t(instance_value_fn)(const drv_instance_t *inst);

static int64_t s_in(const drv_instance_t *i)
{
    return i->records_in;
}
static int64_t s_out(const drv_instance_t *i)
{
    return i->records_out;
}
static int64_t s_errors(const drv_instance_t *i)
{
    return i->errors;
}
static int64_t s_restarts(const drv_instance_t *i)
{
    return i->restarts;
}
static int64_t s_up(const drv_instance_t *i)
{
    return i->state == DRV_INST_READY;
}

typedef struct {
    drv_pipeline_t **all; // every pipeline, one snapshot for the whole page
    size_t count;
} pipelines_t;

static void s_instance_metric(text_t *t, const pipelines_t *ps, const char *name, const char *type, const char *help,
                              instance_value_fn *fn)
{
    s_header(t, name, type, help);
    for (size_t k = 0; k < ps->count; k++) {
        drv_pipeline_t *p = ps->all[k];
        for (drv_instance_t *i = zlistx_first(p->instances); i; i = zlistx_next(p->instances)) {
            s_printf(t, "%s{group=\"%s\",pipeline=\"%s\",core=\"%d\",generation=\"%lld\"} %lld\n", name, p->group,
                     p->name, i->core, (long long)i->generation, (long long)fn(i));
        }
    }
}

typedef int64_t(pipeline_value_fn)(const drv_pipeline_t *p);

static int64_t s_desired(const drv_pipeline_t *p)
{
    return p->core_count;
}
static int64_t s_ready(const drv_pipeline_t *p)
{
    return drv_status_ready_instances(p);
}
static int64_t s_crashes(const drv_pipeline_t *p)
{
    return p->crashes;
}
static int64_t s_degraded(const drv_pipeline_t *p)
{
    return p->cond_degraded.status ? 1 : 0;
}
static int64_t s_generation(const drv_pipeline_t *p)
{
    return p->generation;
}
static int64_t s_total_in(const drv_pipeline_t *p)
{
    return drv_status_totals(p).records_in;
}
static int64_t s_total_out(const drv_pipeline_t *p)
{
    return drv_status_totals(p).records_out;
}
static int64_t s_total_errors(const drv_pipeline_t *p)
{
    return drv_status_totals(p).errors;
}
static int64_t s_buffer_bytes(const drv_pipeline_t *p)
{
    return drv_status_buffer(p).bytes;
}
static int64_t s_buffer_records(const drv_pipeline_t *p)
{
    return drv_status_buffer(p).records;
}
static int64_t s_buffer_replayed(const drv_pipeline_t *p)
{
    return drv_status_buffer(p).replayed;
}
static int64_t s_buffer_dropped(const drv_pipeline_t *p)
{
    return drv_status_buffer(p).dropped;
}
static int64_t s_buffer_corrupt(const drv_pipeline_t *p)
{
    return drv_status_buffer(p).corrupt_segments;
}

static void s_pipeline_metric(text_t *t, const pipelines_t *ps, const char *name, const char *type, const char *help,
                              pipeline_value_fn *fn)
{
    s_header(t, name, type, help);
    for (size_t k = 0; k < ps->count; k++) {
        s_printf(t, "%s{group=\"%s\",pipeline=\"%s\"} %lld\n", name, ps->all[k]->group, ps->all[k]->name,
                 (long long)fn(ps->all[k]));
    }
}

//  True when the node of p is of kind prefix ("exporter:"); NULL: any.
static bool s_of_kind(const drv_pipeline_t *p, const char *node, const char *prefix)
{
    const char *type =
        json_string_value(json_object_get(json_object_get(json_object_get(p->spec, "nodes"), node), "type"));
    return !prefix || (type && !strncmp(type, prefix, strlen(prefix)));
}

//  A figure of each node (of kind prefix; NULL: every node), summed over
//  the instances of each generation: a line per pipeline, generation and
//  node. value: the figure of a node's counters (drover/drv_node_counters.h),
//  or -1 when it has none; label: one more label ("" or ",reason=\"x\"")
//  when several lines share the name.
typedef json_int_t (*value_fn)(const json_t *counters, const void *arg);

static void s_node_sums(text_t *t, const pipelines_t *ps, const char *name, const char *prefix, const char *label,
                        value_fn value, const void *arg)
{
    for (size_t k = 0; k < ps->count; k++) {
        drv_pipeline_t *p = ps->all[k];
        json_t *sums = json_object(); // "generation/node" -> sum
        for (drv_instance_t *i = zlistx_first(p->instances); i; i = zlistx_next(p->instances)) {
            const char *node;
            json_t *counters;
            json_object_foreach(i->nodes, node, counters)
            {
                json_int_t v = s_of_kind(p, node, prefix) ? value(counters, arg) : -1;
                if (v < 0) {
                    continue;
                }
                char key[120];
                snprintf(key, sizeof key, "%lld/%s", (long long)i->generation, node);
                json_object_set_new(sums, key, json_integer(json_integer_value(json_object_get(sums, key)) + v));
            }
        }
        const char *key;
        json_t *sum;
        json_object_foreach(sums, key, sum)
        {
            const char *slash = strchr(key, '/');
            s_printf(t, "%s{group=\"%s\",pipeline=\"%s\",node=\"%s\",generation=\"%.*s\"%s} %lld\n", name, p->group,
                     p->name, slash + 1, (int)(slash - key), key, label, (long long)json_integer_value(sum));
        }
        json_decref(sums);
    }
}

static json_int_t s_counter(const json_t *counters, const void *arg)
{
    return drv_node_counter(counters, *(const drv_node_counter_t *)arg);
}

//  A node's dropped records: an exporter's are those it gave up and those
//  its full queue let go.
static json_int_t s_dropped(const json_t *counters, const void *arg)
{
    (void)arg;
    return drv_node_counter(counters, DRV_NC_DROPPED) +
           (drv_node_counters_exporter(counters) ? drv_node_counter(counters, DRV_NC_QUEUE_DROPPED) : 0);
}

static void s_node_lines(text_t *t, const pipelines_t *ps, const char *name, const char *prefix, const char *label,
                         drv_node_counter_t which)
{
    s_node_sums(t, ps, name, prefix, label, s_counter, &which);
}

static void s_node_metric(text_t *t, const pipelines_t *ps, const char *name, const char *type, const char *prefix,
                          const char *help, drv_node_counter_t which)
{
    s_header(t, name, type, help);
    s_node_lines(t, ps, name, prefix, "", which);
}

//  receiver:kafka's partitions (drv_node_counters_details): the lag of
//  each, from the instance that reads it.
static void s_kafka_lag(text_t *t, const pipelines_t *ps)
{
    s_header(t, "drover_kafka_consumer_lag", "gauge",
             "Messages of a partition receiver:kafka reads that are not committed yet: the log's end, as last "
             "fetched, less the group's committed offset.");
    for (size_t k = 0; k < ps->count; k++) {
        drv_pipeline_t *p = ps->all[k];
        for (drv_instance_t *i = zlistx_first(p->instances); i; i = zlistx_next(p->instances)) {
            const char *node, *name;
            json_t *counters, *partition;
            json_object_foreach(i->nodes, node, counters)
            {
                json_object_foreach(json_object_get(drv_node_counters_details(counters), "partitions"), name, partition)
                {
                    const char *slash = strrchr(name, '/');
                    json_t *lag = json_object_get(partition, "lag");
                    if (slash && json_is_integer(lag)) {
                        s_printf(t,
                                 "drover_kafka_consumer_lag{group=\"%s\",pipeline=\"%s\",node=\"%s\","
                                 "generation=\"%lld\",topic=\"%.*s\",partition=\"%s\"} %lld\n",
                                 p->group, p->name, node, (long long)i->generation, (int)(slash - name), name,
                                 slash + 1, (long long)json_integer_value(lag));
                    }
                }
            }
        }
    }
}

//  A figure processor:kubernetes tells of itself (drv_node_counters_details'
//  "kubernetes", docs/kubernetes.md); field "watching": 1 when its pod watch is.
static json_int_t s_kubernetes_value(const json_t *counters, const void *arg)
{
    const char *field = arg;
    json_t *k8s = json_object_get(drv_node_counters_details(counters), "kubernetes");
    const char *watch = json_string_value(json_object_get(k8s, "watch"));
    if (!json_is_object(k8s)) {
        return -1;
    }
    return strcmp(field, "watching") ? json_integer_value(json_object_get(k8s, field))
                                     : watch && !strcmp(watch, "watching");
}

static void s_kubernetes(text_t *t, const pipelines_t *ps, const char *name, const char *type, const char *field,
                         const char *help)
{
    s_header(t, name, type, help);
    s_node_sums(t, ps, name, "processor:kubernetes", "", s_kubernetes_value, field);
}

static void s_print(void *arg, const char *fmt, ...)
{
    text_t *t = arg;
    char line[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    s_printf(t, "%s", line);
}

static void s_free_histo(void **item)
{
    free(*item);
    *item = NULL;
}

//  The nodes' durations (the heartbeat's last element, drv_histo_json),
//  summed over the instances of each generation: a histogram per pipeline,
//  generation and node of kind prefix.
static void s_node_histogram(text_t *t, const pipelines_t *ps, const char *name, const char *prefix, const char *help)
{
    s_header(t, name, "histogram", help);
    for (size_t k = 0; k < ps->count; k++) {
        drv_pipeline_t *p = ps->all[k];
        zhashx_t *sums = zhashx_new(); // "generation/node" -> drv_histo_t
        zhashx_set_destructor(sums, s_free_histo);
        for (drv_instance_t *i = zlistx_first(p->instances); i; i = zlistx_next(p->instances)) {
            const char *node;
            json_t *counters;
            json_object_foreach(i->nodes, node, counters)
            {
                json_t *last = drv_node_counters_histogram(counters);
                if (!s_of_kind(p, node, prefix) || !last) {
                    continue;
                }
                char key[120];
                snprintf(key, sizeof key, "%lld/%s", (long long)i->generation, node);
                drv_histo_t *sum = zhashx_lookup(sums, key);
                if (!sum) {
                    sum = calloc(1, sizeof *sum);
                    zhashx_insert(sums, key, sum);
                }
                drv_histo_add_json(sum, last);
            }
        }
        for (drv_histo_t *sum = zhashx_first(sums); sum; sum = zhashx_next(sums)) {
            const char *key = zhashx_cursor(sums);
            const char *slash = strchr(key, '/');
            char labels[300];
            snprintf(labels, sizeof labels, "group=\"%s\",pipeline=\"%s\",node=\"%s\",generation=\"%.*s\"", p->group,
                     p->name, slash + 1, (int)(slash - key), key);
            drv_histo_render(sum, name, labels, s_print, t);
        }
        zhashx_destroy(&sums);
    }
}

char *drv_metrics_render(drv_engine_t *engine)
{
    text_t t = {malloc(8192), 0, 8192};
    pipelines_t ps;
    ps.all = drv_registry_pipelines(engine, &ps.count);
    s_instance_metric(&t, &ps, "drover_instance_records_in_total", "counter",
                      "Records that entered the instance's receivers.", s_in);
    s_instance_metric(
        &t, &ps, "drover_instance_records_out_total", "counter",
        "Records the instance's exporters delivered, each once however many exporters a fan-out gives it.", s_out);
    s_instance_metric(&t, &ps, "drover_instance_errors_total", "counter",
                      "Rejected producer messages and failed exports.", s_errors);
    s_instance_metric(&t, &ps, "drover_instance_restarts_total", "counter",
                      "Restarts of this instance slot after crashes.", s_restarts);
    s_instance_metric(&t, &ps, "drover_instance_up", "gauge", "1 when the instance is ready, else 0.", s_up);

    s_node_metric(&t, &ps, "drover_node_records_in_total", "counter", NULL,
                  "Records given to the node (receivers: read), summed "
                  "over the generation's instances since each started.",
                  DRV_NC_IN);
    s_node_metric(&t, &ps, "drover_node_records_out_total", "counter", NULL,
                  "Records the node handed on (exporters: exported), summed over the generation's instances.",
                  DRV_NC_OUT);
    s_header(&t, "drover_node_records_dropped_total", "counter",
             "Records the node did not hand on (filter, route without default, nil from a script, "
             "a script error with on_error drop, an exporter giving up or its full queue letting go).");
    s_node_sums(&t, &ps, "drover_node_records_dropped_total", NULL, "", s_dropped, NULL);
    s_node_metric(&t, &ps, "drover_node_errors_total", "counter", NULL,
                  "Records or inputs the node failed on (script errors and limits, refused input, failed exports).",
                  DRV_NC_ERRORS);
    s_node_metric(&t, &ps, "drover_exporter_retries_total", "counter", "exporter:",
                  "Attempts the exporter made again after a failure (a batch posted again, a held write retried).",
                  DRV_NC_RETRIES);
    s_header(&t, "drover_exporter_dropped_records_total", "counter",
             "Records the exporter dropped, by reason: GaveUp (an answer that retrying cannot help, "
             "retry.max_elapsed_secs passed, a record it cannot encode) or QueueFull (its queue was "
             "full, queue.when_full: drop_oldest).");
    s_node_lines(&t, &ps, "drover_exporter_dropped_records_total", "exporter:", ",reason=\"GaveUp\"", DRV_NC_DROPPED);
    s_node_lines(&t, &ps, "drover_exporter_dropped_records_total", "exporter:", ",reason=\"QueueFull\"",
                 DRV_NC_QUEUE_DROPPED);
    s_node_metric(&t, &ps, "drover_exporter_backlog_records", "gauge",
                  "exporter:", "Records the exporter holds, not delivered yet.", DRV_NC_BACKLOG);
    s_node_metric(&t, &ps, "drover_exporter_queue_records", "gauge",
                  "exporter:", "Records in the exporter's queue, not delivered yet (the backlog).", DRV_NC_BACKLOG);
    s_node_metric(&t, &ps, "drover_exporter_queue_bytes", "gauge",
                  "exporter:", "Bytes the exporter's queue holds (queue.max_bytes bounds it).", DRV_NC_QUEUE_BYTES);
    s_node_histogram(&t, &ps, "drover_receiver_request_duration_seconds", "receiver:",
                     "HTTP and gRPC requests of the receiver, from their head to their answer (with ack: once "
                     "exported).");
    s_node_histogram(&t, &ps, "drover_export_duration_seconds", "exporter:",
                     "Each attempt of the exporter to hand a batch on, from start to end: a post "
                     "(exporter:http, exporter:otlp, until the answer), a write (exporter:file), a send "
                     "(exporter:zmq).");
    s_kafka_lag(&t, &ps);
    s_kubernetes(&t, &ps, "drover_kubernetes_watching", "gauge", "watching",
                 "Instances whose processor:kubernetes is watching pods (0: listing, or backing off after a failure).");
    s_kubernetes(&t, &ps, "drover_kubernetes_pods", "gauge", "pods", "Pods in processor:kubernetes's cache.");
    s_kubernetes(&t, &ps, "drover_kubernetes_relists_total", "counter", "relists",
                 "Lists after the first (a 410, a watch that could not go on).");
    s_kubernetes(&t, &ps, "drover_kubernetes_watch_errors_total", "counter", "watch_errors",
                 "Failed requests to the Kubernetes API (each backed off).");
    s_kubernetes(&t, &ps, "drover_kubernetes_enriched_records_total", "counter", "enriched",
                 "Records whose pod processor:kubernetes found.");
    s_kubernetes(&t, &ps, "drover_kubernetes_unmatched_records_total", "counter", "unmatched",
                 "Records processor:kubernetes passed without metadata: no pod known for them.");
    s_pipeline_metric(&t, &ps, "drover_pipeline_desired_cores", "gauge", "Cores the pipeline should run on.",
                      s_desired);
    s_pipeline_metric(&t, &ps, "drover_pipeline_ready_instances", "gauge", "Ready instances of the pipeline.", s_ready);
    s_pipeline_metric(&t, &ps, "drover_pipeline_degraded", "gauge", "1 when the pipeline is degraded.", s_degraded);
    s_pipeline_metric(&t, &ps, "drover_pipeline_crashes_total", "counter",
                      "Crashes of the pipeline's instances (an exit nobody asked for), those while draining too.",
                      s_crashes);
    s_pipeline_metric(&t, &ps, "drover_pipeline_generation", "gauge", "The pipeline's active generation.",
                      s_generation);
    s_pipeline_metric(&t, &ps, "drover_pipeline_records_in_total", "counter",
                      "Records that entered the pipeline since it was created, over every generation and "
                      "restart: a replace never resets it.",
                      s_total_in);
    s_pipeline_metric(&t, &ps, "drover_pipeline_records_out_total", "counter",
                      "Records the pipeline's exporters wrote since it was created, over every generation.",
                      s_total_out);
    s_pipeline_metric(&t, &ps, "drover_pipeline_errors_total", "counter",
                      "Errors of the pipeline since it was created, over every generation.", s_total_errors);
    s_pipeline_metric(&t, &ps, "drover_buffer_bytes", "gauge",
                      "Bytes of the pipeline's disk buffer on disk (0 with a memory buffer).", s_buffer_bytes);
    s_pipeline_metric(&t, &ps, "drover_buffer_records", "gauge",
                      "Records in the pipeline's disk buffer not yet settled by every exporter (what an earlier "
                      "process left counts once it is read back).",
                      s_buffer_records);
    s_pipeline_metric(&t, &ps, "drover_buffer_replayed_records_total", "counter",
                      "Records read back from a disk buffer that an earlier process had taken.", s_buffer_replayed);
    s_pipeline_metric(&t, &ps, "drover_buffer_dropped_records_total", "counter",
                      "Records a full disk buffer dropped (when_full: drop_oldest).", s_buffer_dropped);
    s_pipeline_metric(&t, &ps, "drover_buffer_corrupt_segments_total", "counter",
                      "Disk buffer segments cut short at damage (the damaged bytes kept in quarantine).",
                      s_buffer_corrupt);
    free(ps.all);
    s_header(&t, "drover_build_info", "gauge", "Always 1; its labels say which drover this is.");
    s_printf(&t, "drover_build_info{version=\"%s\"} 1\n", drv_version());
    s_header(&t, "drover_rollouts_total", "counter", "Rollouts by action and final state.");
    static const char *actions[] = {"create", "noop", "resize", "replace"};
    static const char *states[] = {"succeeded", "failed", "rollback_failed"};
    for (int a = 0; a < 4; a++) {
        for (int s = 0; s < 3; s++) {
            s_printf(&t, "drover_rollouts_total{action=\"%s\",state=\"%s\"} %lld\n", actions[a], states[s],
                     (long long)engine->rollout_counts[a][s]);
        }
    }
    s_header(&t, "drover_rollout_duration_seconds", "histogram", "Rollouts by action, from start to end.");
    for (int a = 0; a < 4; a++) {
        char labels[40];
        snprintf(labels, sizeof labels, "action=\"%s\"", actions[a]);
        drv_histo_render(&engine->rollout_durations[a], "drover_rollout_duration_seconds", labels, s_print, &t);
    }
    s_header(&t, "drover_broker_up", "gauge", "1 when the broker is connected to droverd.");
    s_printf(&t, "drover_broker_up %d\n", engine->broker->connected ? 1 : 0);
    s_header(&t, "drover_broker_restarts_total", "counter", "Restarts of the broker after it exited.");
    s_printf(&t, "drover_broker_restarts_total %d\n", engine->broker->restarts);
    s_header(&t, "drover_broker_forwarded_batches_total", "counter",
             "Producer messages the current broker process forwarded to instances.");
    s_printf(&t, "drover_broker_forwarded_batches_total %lld\n", (long long)engine->broker->forwarded);
    s_header(&t, "drover_broker_refused_messages_total", "counter",
             "Producer messages the current broker process refused as larger than "
             "engine.limits.max_message_bytes (updated with its heartbeat, every 5 s).");
    s_printf(&t, "drover_broker_refused_messages_total %lld\n", (long long)engine->broker->refused);
    s_header(&t, "drover_sse_events_dropped_total", "counter",
             "Events not queued for a Server-Sent Events client whose queue was full (a slow client).");
    s_printf(&t, "drover_sse_events_dropped_total %lld\n", (long long)engine->sse_dropped);
    s_header(&t, "drover_sse_clients", "gauge", "Clients of GET /api/v1/events.");
    s_printf(&t, "drover_sse_clients %zu\n", drv_sse_clients(engine));
    s_header(&t, "drover_config_reloads_total", "counter",
             "Reloads of the config file (SIGHUP or engine.watch_config), applied or refused as invalid.");
    s_printf(&t, "drover_config_reloads_total{result=\"applied\"} %lld\n", (long long)engine->config_reloads[0]);
    s_printf(&t, "drover_config_reloads_total{result=\"refused\"} %lld\n", (long long)engine->config_reloads[1]);
    s_header(&t, "drover_state_save_failures_total", "counter",
             "Failed writes of engine.state_file; each is retried until one succeeds.");
    s_printf(&t, "drover_state_save_failures_total %lld\n", (long long)engine->state->failures);
    s_header(&t, "drover_start_time_seconds", "gauge", "When droverd started, Unix time.");
    s_printf(&t, "drover_start_time_seconds %.3f\n", engine->started_at / 1000.0);
    if (engine->config->telemetry) { // engine.telemetry's agent (telemetry/drv_telemetry.c)
        s_header(&t, "drover_telemetry_sent_requests_total", "counter",
                 "Requests of droverd's own telemetry the collector took, by signal.");
        s_printf(&t, "drover_telemetry_sent_requests_total{signal=\"metrics\"} %lld\n",
                 (long long)engine->telemetry_sent[0]);
        s_printf(&t, "drover_telemetry_sent_requests_total{signal=\"logs\"} %lld\n",
                 (long long)engine->telemetry_sent[1]);
        s_header(&t, "drover_telemetry_failed_requests_total", "counter",
                 "Requests of droverd's own telemetry the collector did not take (log lines are sent again).");
        s_printf(&t, "drover_telemetry_failed_requests_total %lld\n", (long long)engine->telemetry_failures);
        s_header(&t, "drover_telemetry_dropped_log_records_total", "counter",
                 "droverd's log lines dropped from the telemetry queue, full while the collector did not take them.");
        s_printf(&t, "drover_telemetry_dropped_log_records_total %lld\n", (long long)engine->telemetry_dropped_logs);
    }
    return t.data;
}
