/*  receiver:prometheus_remote_write — Prometheus remote write 1.0 from
    Prometheus, its agent mode, vmagent (docs/operations.md, "Prometheus
    remote write in"): POST /api/v1/write of a snappy-compressed
    WriteRequest, checked by drv_pbcheck before protobuf-c decodes it (the
    decompressed size bounded by max_body_bytes, before decompressing).
    Each sample becomes a metric record as receiver:otlp makes them: a
    series whose name ends with _total a cumulative monotonic sum, the
    rest gauges, its labels but __name__ as attributes. 204 once the
    pipeline took them; 429 with Retry-After when it pushes back, and the
    sender sends again. */
#include "drv_http_node.h"
#include "drv_node.h"
#include "drv_pbcheck.h"
#include "drv_schemas.h"

#include "prometheus/remote.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLES_MAX 200000 // a request's samples at most: each is a record of its own
#define STR(s) ((msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)strlen(s), (s)}})

typedef struct {
    drv_http_server_t *server; // first: drv_http_node's hooks find it there
    const char *paths[2];
    char *path;
} remote_write_t;

static const char *const s_media_types[] = {"application/x-protobuf", NULL};

static msgpack_object s_text(drv_node_t *node, const char *text)
{
    size_t len = text ? strlen(text) : 0;
    char *copy = drv_node_alloc(node, len + 1);
    memcpy(copy, text ? text : "", len + 1);
    return (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)len, copy}};
}

static bool s_counter(const char *name)
{
    size_t len = name ? strlen(name) : 0;
    return len > 6 && !strcmp(name + len - 6, "_total");
}

//  The records of one series, one per sample, into out; returns how many.
static size_t s_series(drv_node_t *node, const Prometheus__TimeSeries *ts, msgpack_object *out)
{
    const char *name = NULL;
    for (size_t i = 0; i < ts->n_labels; i++) {
        if (ts->labels[i]->name && !strcmp(ts->labels[i]->name, "__name__")) {
            name = ts->labels[i]->value;
        }
    }
    msgpack_object_kv *attrs = drv_node_alloc(node, (ts->n_labels ? ts->n_labels : 1) * sizeof *attrs);
    uint32_t nattrs = 0;
    for (size_t i = 0; i < ts->n_labels; i++) {
        if (ts->labels[i]->name && strcmp(ts->labels[i]->name, "__name__")) {
            attrs[nattrs++] =
                (msgpack_object_kv){s_text(node, ts->labels[i]->name), s_text(node, ts->labels[i]->value)};
        }
    }
    msgpack_object attributes = {.type = MSGPACK_OBJECT_MAP, .via.map = {.size = nattrs, .ptr = attrs}};
    msgpack_object metric = s_text(node, name ? name : "");
    bool counter = s_counter(name);
    for (size_t s = 0; s < ts->n_samples; s++) {
        msgpack_object_kv *kv = drv_node_alloc(node, 9 * sizeof *kv);
        uint32_t n = 0;
        kv[n++] = (msgpack_object_kv){STR("signal"), STR("metric")};
        kv[n++] = (msgpack_object_kv){STR("name"), metric};
        kv[n++] = (msgpack_object_kv){STR("type"), counter ? STR("sum") : STR("gauge")};
        if (counter) {
            kv[n++] = (msgpack_object_kv){STR("aggregation_temporality"),
                                          {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 2}};
            kv[n++] = (msgpack_object_kv){STR("is_monotonic"), {.type = MSGPACK_OBJECT_BOOLEAN, .via.boolean = true}};
        }
        int64_t ms = ts->samples[s]->timestamp;
        kv[n++] = (msgpack_object_kv){
            STR("time_unix_nano"),
            {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = ms > 0 ? (uint64_t)ms * 1000000u : 0}};
        kv[n++] = (msgpack_object_kv){STR("attributes"), attributes};
        kv[n++] = (msgpack_object_kv){STR("value"), {.type = MSGPACK_OBJECT_FLOAT64, .via.f64 = ts->samples[s]->value}};
        out[s] = (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {.size = n, .ptr = kv}};
    }
    return ts->n_samples;
}

static void s_handle(void *arg, const drv_http_request_t *request, drv_http_reply_t *reply)
{
    drv_node_t *node = arg;
    char why[300];
    if (drv_pbcheck(&prometheus__write_request__descriptor, request->body, request->size, why, sizeof why) != 0) {
        drv_node_count_refused(node);
        drv_http_reply_error(reply, 400, "invalid_request", "not a remote-write WriteRequest: %s", why);
        return;
    }
    Prometheus__WriteRequest *write =
        prometheus__write_request__unpack(NULL, request->size, (const uint8_t *)request->body);
    if (!write) {
        drv_node_count_refused(node);
        drv_http_reply_error(reply, 400, "invalid_request", "not a remote-write WriteRequest");
        return;
    }
    size_t samples = 0;
    for (size_t i = 0; i < write->n_timeseries; i++) {
        samples += write->timeseries[i]->n_samples;
    }
    if (samples > SAMPLES_MAX) {
        prometheus__write_request__free_unpacked(write, NULL);
        drv_node_count_refused(node);
        drv_http_reply_error(reply, 413, "payload_too_large",
                             "%zu samples in one request: at most %d (lower the sender's max_samples_per_send)",
                             samples, SAMPLES_MAX);
        return;
    }
    msgpack_zone *zone = drv_node_batch_zone(node); // cleared: the request's records are made there
    (void)zone;
    msgpack_object *records = drv_node_alloc(node, (samples ? samples : 1) * sizeof *records);
    size_t n = 0;
    for (size_t i = 0; i < write->n_timeseries; i++) {
        n += s_series(node, write->timeseries[i], records + n);
    }
    prometheus__write_request__free_unpacked(write, NULL);
    if (n > 0 && !drv_node_emit_objects(node, records, n)) {
        drv_http_reply_error(reply, 429, "too_many_requests", "the pipeline takes nothing now; retry later");
        reply->retry_after_secs = 1;
        return;
    }
    reply->status = 204;
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    remote_write_t *self = calloc(1, sizeof *self);
    node->state = self;
    self->path = strdup(json_string_value(json_object_get(config, "path")));
    self->paths[0] = self->path;
    drv_http_config_t server = {
        .paths = self->paths, .media_types = s_media_types, .handler = s_handle, .snappy = true};
    return drv_http_node_listen(node, &self->server, config, &server, err, errlen);
}

static void s_destroy(drv_node_t *node)
{
    remote_write_t *self = node->state;
    if (!self) {
        return;
    }
    drv_http_server_destroy(&self->server);
    free(self->path);
    free(self);
}

const drv_node_kind_t drv_receiver_prometheus_remote_write = {
    .schema = &drv_schema_receiver_prometheus_remote_write,
    .init = s_init,
    DRV_HTTP_NODE_HOOKS,
    .destroy = s_destroy,
};
