/*  receiver:http's schema (worker/nodes/drv_receiver_http.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"

#include <string.h>

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    drv_http_node_check(check, node_path, config, "0.0.0.0:8080");
    drv_http_node_check_path(check, node_path, config);
}

const drv_node_schema_t drv_schema_receiver_http = {
    .name = "receiver:http",
    .role = DRV_ROLE_RECEIVER,
    .doc = "HTTP POSTs of NDJSON, a JSON object or array, or msgpack (by Content-Type), gzip or not; "
           "200 with the count, 400 naming what is wrong, 413 past max_body_bytes, 429 with "
           "Retry-After while the exporters are behind. The socket is droverd's: no connection is "
           "refused while instances change.",
    .example = "{type: receiver:http, config: {endpoint: \"127.0.0.1:8081\", path: /ingest}, to: [out]}",
    .keys = {{.key = "endpoint",
              .kind = DRV_KEY_STRING,
              .required = true,
              .doc = "host:port droverd binds and every instance serves"},
             {.key = "path", .kind = DRV_KEY_STRING, .fallback = "\"/\"", .doc = "the one path taken; others get 404"},
             {.key = "ack",
              .kind = DRV_KEY_BOOL,
              .fallback = "false",
              .doc = "true: a request is answered only once its records are exported: 200, or 502 when an "
                     "exporter gave some of them up (with a disk buffer and ack false: once durable)"},
             {.key = "max_body_bytes",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "4194304",
              .maximum = DRV_LIMIT_MESSAGE_CEILING,
              .doc = "the largest body taken, after gzip; a larger one gets 413"},
             {.key = "connections",
              .kind = DRV_KEY_OBJECT,
              .doc = "{per_address, total, idle_secs, request_secs}: connections one client address may "
                     "hold (default 64), all together (1024), per instance; how long a silent connection "
                     "(30 s) and one request (30 s) may take on the client's clock. Behind a load balancer "
                     "every client may share a few addresses: raise per_address"}},
    .check = s_check,
};
