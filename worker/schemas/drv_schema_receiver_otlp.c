/*  receiver:otlp's schema (worker/nodes/drv_receiver_otlp.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_listen.h"
#include "drover/drv_node_schema.h"

#include <string.h>

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    drv_http_node_check(check, node_path, config, "0.0.0.0:4318");
    json_t *signals = json_object_get(config, "signals");
    size_t i;
    json_t *s;
    json_array_foreach(signals, i, s)
    {
        const char *name = json_string_value(s); // not a string: the list's own check said so
        if (name && strcmp(name, "logs") != 0 && strcmp(name, "traces") != 0 && strcmp(name, "metrics") != 0) {
            drv_spec_check_problem(check, node_path, "config.signals[%zu]: must be logs, traces or metrics", i);
        }
    }
    if (json_is_array(signals) && json_array_size(signals) == 0) {
        drv_spec_check_problem(check, node_path, "config.signals: must name logs, traces or metrics");
    }
    const char *grpc = json_string_value(json_object_get(config, "grpc_endpoint"));
    char why[200];
    drv_listen_endpoint_t parsed;
    if (grpc && (drv_listen_parse(grpc, &parsed, why, sizeof why) != 0 || parsed.type != DRV_LISTEN_TCP)) {
        drv_spec_check_problem(check, node_path, "config.grpc_endpoint: must be host:port (0.0.0.0:4317)");
    }
    json_t *tls = json_object_get(config, "tls");
    const char *tls_keys[] = {"cert_file", "key_file"};
    for (size_t k = 0; tls && k < 2; k++) {
        json_t *file = json_object_get(tls, tls_keys[k]);
        if (!json_is_string(file) || !json_string_length(file)) {
            drv_spec_check_problem(check, node_path, "config.tls.%s: must be a file path (PEM)", tls_keys[k]);
        }
    }
    const char *key;
    json_t *value;
    json_object_foreach(tls, key, value)
    {
        if (strcmp(key, "cert_file") != 0 && strcmp(key, "key_file") != 0) {
            drv_spec_check_problem(check, node_path, "config.tls.%s: unknown key (cert_file, key_file)", key);
        }
    }
}

const drv_node_schema_t drv_schema_receiver_otlp = {
    .name = "receiver:otlp",
    .role = DRV_ROLE_RECEIVER,
    .doc = "OTLP as an OpenTelemetry collector takes it: OTLP/HTTP (protobuf or JSON, /v1/logs, "
           "/v1/traces, /v1/metrics) on endpoint and OTLP/gRPC on grpc_endpoint; one record per log, "
           "span or data point, with signal, resource and scope. Answers partial_success for what it "
           "refused.",
    .example = "{type: receiver:otlp, config: {endpoint: \"127.0.0.1:4318\", grpc_endpoint: "
               "\"127.0.0.1:4317\"}, to: [out]}",
    .keys = {{.key = "endpoint",
              .kind = DRV_KEY_STRING,
              .required = true,
              .doc = "host:port of OTLP/HTTP (4318 by convention)"},
             {.key = "signals",
              .kind = DRV_KEY_STRING_LIST,
              .fallback = "[\"logs\", \"traces\", \"metrics\"]",
              .doc = "which of logs, traces, metrics are taken; the others get 404 (HTTP) or UNIMPLEMENTED "
                     "(gRPC)"},
             {.key = "ack",
              .kind = DRV_KEY_BOOL,
              .fallback = "false",
              .doc = "true: answered only once exported: success, or 502 (gRPC UNAVAILABLE) when an exporter gave "
                     "some of the records up (with a disk buffer and ack false: once durable)"},
             {.key = "max_body_bytes",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "4194304",
              .maximum = DRV_LIMIT_MESSAGE_CEILING,
              .doc = "the largest request taken, after gzip (HTTP 413, gRPC RESOURCE_EXHAUSTED)"},
             {.key = "grpc_endpoint",
              .kind = DRV_KEY_STRING,
              .doc = "host:port of OTLP/gRPC (4317 by convention); absent: no gRPC"},
             {.key = "tls",
              .kind = DRV_KEY_OBJECT,
              .doc = "{cert_file, key_file}: PEM files; both transports then take TLS only (gRPC with ALPN h2)"},
             {.key = "connections",
              .kind = DRV_KEY_OBJECT,
              .doc = "{per_address, total, idle_secs, request_secs}: connections one client address may hold "
                     "(default 64), all together (1024), per instance; how long a silent connection (30 s over "
                     "HTTP, 300 s over gRPC) and one request (30 s) may take on the client's clock. Behind a load "
                     "balancer every client may share a few addresses: raise per_address"}},
    .check = s_check,
};
