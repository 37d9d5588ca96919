/*  exporter:prometheus_remote_write's schema
    (worker/nodes/drv_exporter_prometheus_remote_write.c is its code). Its
    batch counts samples' points: max_samples where the other exporters
    say max_records. */
#include "drv_schemas.h"

#include "drover/drv_node_schema.h"

#include <string.h>

#define MAX_SAMPLES_DEFAULT 2000

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    json_t *copy = json_deep_copy(config);
    json_t *batch = json_object_get(copy, "batch");
    if (json_is_object(batch)) {
        json_t *samples = json_object_get(batch, "max_samples");
        if (json_object_get(batch, "max_records")) {
            drv_spec_check_problem(check, node_path,
                                   "config.batch.max_records: unknown key (this exporter's batch "
                                   "counts max_samples)");
            json_object_del(batch, "max_records");
        }
        if (samples &&
            (!json_is_integer(samples) || json_integer_value(samples) < 1 || json_integer_value(samples) > 1000000)) {
            drv_spec_check_problem(check, node_path, "config.batch.max_samples: must be an integer from 1 to 1000000");
        }
        json_object_del(batch, "max_samples");
    }
    drv_export_check(check, node_path, copy);
    json_decref(copy);
}

static void s_complete(drv_spec_check_t *check, const char *node_path, json_t *normalized)
{
    drv_export_complete(check, node_path, normalized);
    json_t *batch = json_object_get(normalized, "batch");
    if (json_is_object(batch)) {
        json_object_del(batch, "max_records"); // filled by drv_export_complete: not this exporter's
        if (!json_object_get(batch, "max_samples")) {
            json_object_set_new(batch, "max_samples", json_integer(MAX_SAMPLES_DEFAULT));
        }
    }
}

const drv_node_schema_t drv_schema_exporter_prometheus_remote_write = {
    .name = "exporter:prometheus_remote_write",
    .role = DRV_ROLE_EXPORTER,
    .doc = "Sends metric records to a Prometheus remote-write 1.0 endpoint (Prometheus, Mimir, Thanos, Cortex, "
           "VictoriaMetrics): a snappy-compressed WriteRequest per batch, names and labels translated as "
           "OpenTelemetry's Prometheus compatibility specification says (unit and _total suffixes, job/instance, "
           "target_info; histograms as _bucket/_sum/_count), series sharded over three lanes of one post at a time "
           "so that a series' samples arrive in order; retried on connection errors, 429 and 5xx (honouring "
           "Retry-After), other answers give the batch "
           "up. Records that are not metrics, delta sums and exponential histograms are given up, counted. "
           "docs/operations.md, \"Prometheus remote write\".",
    .example = "{type: exporter:prometheus_remote_write, config: {endpoint: \"http://prometheus:9090/api/v1/write\"}}",
    .details = "Records become samples as OpenTelemetry's Prometheus compatibility specification translates them:\n"
               "\n"
               "| OpenTelemetry | Prometheus |\n"
               "| --- | --- |\n"
               "| the metric's name | characters other than `[a-zA-Z0-9_:]` become `_` (a run of them one `_`); a"
               " leading digit gets `_` before it |\n"
               "| its unit | a suffix: `s` seconds, `ms` milliseconds, `By` bytes, `KiBy` kibibytes, … `%` percent;"
               " `X/Y` `X_per_Y` (`By/s` bytes_per_second); `1` ratio for gauges, nothing for the rest;"
               " `{annotations}` nothing; not added again when the name holds it already |\n"
               "| a monotonic cumulative sum | a counter: the name ends with `_total` (`system.cpu.time` s →"
               " `system_cpu_time_seconds_total`) |\n"
               "| a gauge, a non-monotonic sum | a gauge (`system.memory.usage` By → `system_memory_usage_bytes`) |\n"
               "| a cumulative histogram | `NAME_bucket{le=\"…\"}` (counts made cumulative, `le=\"+Inf\"` the"
               " count), `NAME_sum` (when the point has one), `NAME_count` |\n"
               "| a summary | `NAME{quantile=\"…\"}`, `NAME_sum`, `NAME_count` |\n"
               "| the point's attributes | labels (invalid characters `_`, a leading digit `key_`); values as text |\n"
               "| the resource | `job` = `service.namespace/service.name` (or `service.name`), `instance` ="
               " `service.instance.id`; the other resource attributes once per request as `target_info{job,"
               " instance, …} 1` |\n"
               "| `time_unix_nano` | the sample's timestamp, in milliseconds |\n"
               "\n"
               "`le` and `quantile` values are written as Prometheus clients write them (`10`, `0.005`, `1e+06`,"
               " `+Inf`); labels are sorted by name. Series are sharded over three lanes of the endpoint, each with"
               " one request in flight, so that a series' samples arrive in time order while three requests are"
               " under way; a resource that makes a `target_info` goes down one lane with all its series.\n",
    .keys = {{.key = "endpoint", .kind = DRV_KEY_STRING, .required = true, .doc = "the remote-write URL posted to"},
             DRV_EXPORT_HEADERS_KEY,
             {.key = "batch",
              .kind = DRV_KEY_OBJECT,
              .fallback = "{}",
              .doc = "{max_samples: 2000, max_bytes: 1048576, max_delay_ms: 200}: a request closes at the first "
                     "reached (max_samples counts data points: a histogram's is one)"},
             DRV_EXPORT_TAIL_KEYS},
    .check = s_check,
    .complete = s_complete,
};
