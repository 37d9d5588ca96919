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
           "target_info; histograms as _bucket/_sum/_count), one post at a time so that a series' samples arrive in "
           "order; retried on connection errors, 429 and 5xx (honouring Retry-After), other answers give the batch "
           "up. Records that are not metrics, delta sums and exponential histograms are given up, counted. "
           "docs/operations.md, \"Prometheus remote write\".",
    .example = "{type: exporter:prometheus_remote_write, config: {endpoint: \"http://prometheus:9090/api/v1/write\"}}",
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
