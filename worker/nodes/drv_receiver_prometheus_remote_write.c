/*  receiver:prometheus_remote_write — Prometheus remote write 1.0 from
    Prometheus, its agent mode, vmagent (docs/operations.md, "Prometheus
    remote write in"): POST /api/v1/write of a snappy-compressed
    WriteRequest (the decompressed size bounded by max_body_bytes, before
    decompressing), each sample a metric record (worker/prom/drv_prom_read.c
    says how). 204 once the pipeline took them; 503 with Retry-After when
    it pushes back, and the sender sends again (Prometheus gives up a batch
    answered 429 unless told retry_on_http_429; 503 it always retries). */
#include "drv_http_node.h"
#include "drv_node.h"
#include "drv_prom.h"
#include "drv_schemas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLES_MAX 200000 // a request's samples at most: each is a record of its own

typedef struct {
    drv_http_server_t *server; // first: drv_http_node's hooks find it there
    const char *paths[2];
    char *path;
} remote_write_t;

static const char *const s_media_types[] = {"application/x-protobuf", NULL};

static void s_handle(void *arg, const drv_http_request_t *request, drv_http_reply_t *reply)
{
    drv_node_t *node = arg;
    char why[300];
    msgpack_object *records;
    int n = drv_prom_decode(request->body, request->size, drv_node_batch_zone(node), SAMPLES_MAX, &records, why,
                            sizeof why);
    if (n < 0) {
        drv_node_count_refused(node);
        drv_http_reply_error(reply, n == DRV_PROM_TOO_MANY ? 413 : 400,
                             n == DRV_PROM_TOO_MANY ? "payload_too_large" : "invalid_request", "%s", why);
        return;
    }
    if (n > 0 && !drv_node_emit_objects(node, records, (size_t)n)) {
        drv_http_reply_error(reply, 503, "unavailable", "the pipeline takes nothing now; retry later");
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
    drv_http_config_t server = {.paths = self->paths,
                                .media_types = s_media_types,
                                .handler = s_handle,
                                .snappy = true,
                                .pushback_status = 503};
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
