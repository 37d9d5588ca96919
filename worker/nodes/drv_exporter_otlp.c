/*  exporter:otlp — OTLP/HTTP to a collector or backend: records with
    `signal: span` are posted to {endpoint}/v1/traces, `signal: metric` to
    {endpoint}/v1/metrics (data points grouped back into metrics:
    docs/operations.md, OTLP), every other record to {endpoint}/v1/logs (docs/operations.md's mapping
    back, drv_otlp_build.h), grouped by resource and scope, as protobuf or
    OTLP/JSON, gzip'd unless compression says none. A record whose signal names something else, or a metric
    record without a known type, has no OTLP form here: it is dropped and
    counted in errors. Batching, retries and acknowledgement are
    drv_export's (drv_export.h).

    protocol: grpc sends the same requests as unary calls of the OTLP/gRPC
    services (docs/operations.md, OTLP): endpoint is host:port (h2c), http://host:port
    or https://host:port (TLS, ALPN h2); always protobuf. */
#include "drv_export.h"
#include "drv_node.h"
#include "drv_schemas.h"
#include "drv_otlp_build.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    drv_export_t *export; // first: drv_export's hooks find it there
    bool json;
    char *urls[DRV_EXPORT_LANES];
} otlp_out_t;

static int s_encode(void *arg, int lane, const msgpack_object *records, size_t count, drv_buf_t *body, char *err,
                    size_t errlen)
{
    otlp_out_t *self = arg;
    drv_otlp_signal_t signal = lane == 0 ? DRV_OTLP_LOGS : lane == 1 ? DRV_OTLP_TRACES : DRV_OTLP_METRICS;
    int rc = drv_otlp_encode(signal, self->json, records, count, body);
    if (rc != 0) {
        snprintf(err, errlen, "out of memory encoding");
    }
    return rc;
}

static const char *const s_http_paths[] = {"/v1/logs", "/v1/traces", "/v1/metrics"};
static const char *const s_grpc_paths[] = {"/opentelemetry.proto.collector.logs.v1.LogsService/Export",
                                           "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                                           "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"};

static bool s_has_scheme(const char *endpoint)
{
    return !strncmp(endpoint, "http://", 7) || !strncmp(endpoint, "https://", 8);
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    otlp_out_t *self = calloc(1, sizeof *self);
    node->state = self;
    self->json = !strcmp(json_string_value(json_object_get(config, "encoding")), "json");
    bool grpc = !strcmp(json_string_value(json_object_get(config, "protocol")), "grpc");
    const char *endpoint = json_string_value(json_object_get(config, "endpoint"));
    size_t len = strlen(endpoint);
    while (len > 0 && endpoint[len - 1] == '/') {
        len--; // http://host:4318/ and http://host:4318 are the same base
    }
    const char *scheme = grpc && !s_has_scheme(endpoint) ? "http://" : "";
    for (int i = 0; i < 3; i++) {
        if (asprintf(&self->urls[i], "%s%.*s%s", scheme, (int)len, endpoint, grpc ? s_grpc_paths[i] : s_http_paths[i]) <
            0) {
            snprintf(err, errlen, "node %s: out of memory", node->id);
            return -1;
        }
    }
    const char *type = grpc ? "application/grpc" : self->json ? "application/json" : "application/x-protobuf";
    drv_export_format_t exporting = {.lanes = {{self->urls[0], type}, {self->urls[1], type}, {self->urls[2], type}},
                                     .lane_count = 3,
                                     .grpc = grpc,
                                     .encode = s_encode,
                                     .arg = self};
    self->export = drv_export_new(node, config, &exporting, err, errlen);
    return self->export ? 0 : -1;
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    otlp_out_t *self = node->state;
    for (size_t i = 0; i < n; i++) {
        char why[200];
        int lane = drv_otlp_signal_of(&records[i], why, sizeof why);
        if (lane >= 0) {
            drv_export_record(self->export, lane, &records[i]);
        } else {
            drv_node_export_error(node, 1, why);
            drv_node_count_gave_up(node, 1);
        }
    }
}

static void s_destroy(drv_node_t *node)
{
    otlp_out_t *self = node->state;
    if (self) {
        drv_export_destroy(&self->export);
        free(self->urls[0]);
        free(self->urls[1]);
        free(self->urls[2]);
        free(self);
    }
}

const drv_node_kind_t drv_exporter_otlp = {
    .schema = &drv_schema_exporter_otlp,
    .init = s_init,
    .run = s_run,
    DRV_EXPORT_NODE_HOOKS,
    .destroy = s_destroy,
};
