/*  receiver:prometheus_remote_write's schema
    (worker/nodes/drv_receiver_prometheus_remote_write.c is its code). */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"

#include <string.h>

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    drv_http_node_check(check, node_path, config, "0.0.0.0:9201");
    drv_http_node_check_path(check, node_path, config);
}

const drv_node_schema_t drv_schema_receiver_prometheus_remote_write = {
    .name = "receiver:prometheus_remote_write",
    .role = DRV_ROLE_RECEIVER,
    .doc = "Takes Prometheus remote write 1.0 (Prometheus, its agent mode, vmagent): a snappy WriteRequest per "
           "POST, each sample a metric record (a series named _total a cumulative monotonic sum, the rest gauges; "
           "labels but __name__ as attributes); 204 once taken, 503 with Retry-After when the pipeline pushes "
           "back, 400 naming what is wrong, 413 past max_body_bytes decompressed or 200,000 samples. "
           "docs/operations.md, \"Prometheus remote write in\".",
    .example = "{type: receiver:prometheus_remote_write, config: {endpoint: \"0.0.0.0:9201\"}, to: [out]}",
    .details = "Each sample of a `WriteRequest` becomes a metric record:\n"
               "\n"
               "| remote write | record |\n"
               "| --- | --- |\n"
               "| a series whose `__name__` ends with `_total` | `type: sum`, cumulative (`aggregation_temporality`"
               " 2), monotonic |\n"
               "| any other series | `type: gauge` (remote write 1.0 says no more about types) |\n"
               "| `__name__` | `name`, kept as it is (`node_cpu_seconds_total` stays that) |\n"
               "| the other labels | attributes, `job` and `instance` among them (a name given twice: the first; an"
               " empty name: none) |\n"
               "| the sample's timestamp (ms) | `time_unix_nano` |\n"
               "| its value | `value` |\n"
               "\n"
               "A request is refused whole (400) for a series of more than 128 labels or a label name or value over"
               " 64 KiB, and (413) over `max_body_bytes` once decompressed or over 200,000 samples.\n",
    .keys = {{.key = "endpoint",
              .kind = DRV_KEY_STRING,
              .required = true,
              .doc = "host:port droverd binds and every instance serves (Prometheus' remote_write url: "
                     "http://HOST:PORT/api/v1/write)"},
             {.key = "path", .kind = DRV_KEY_STRING, .fallback = "\"/api/v1/write\"", .doc = "the path taken"},
             {.key = "max_body_bytes",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "4194304",
              .maximum = DRV_LIMIT_MESSAGE_CEILING,
              .doc = "the largest body taken, decompressed (checked before decompressing); larger gets 413"},
             {.key = "connections",
              .kind = DRV_KEY_OBJECT,
              .doc = "{per_address, total, idle_secs, request_secs}: as receiver:http's"}},
    .check = s_check,
};
