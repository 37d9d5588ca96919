/*  receiver:http — records POSTed over HTTP: NDJSON (one object per line),
    JSON (an object, or an array of objects) or msgpack (a map, or an array
    of maps), optionally gzip'd. 200 {"accepted": N}; a body with any bad
    record is refused whole with 400 naming the first bad line or item.

    The listening socket is droverd's, shared by every instance of every
    generation (drv_http_server.h says how an instance serves it and how it
    drains). Records are exported before the answer is sent: the DAG runs
    them through to the exporters synchronously, so with ack or without, a
    200 means every record of the request was exported. */
#include "drv_http_body.h"
#include "drv_http_node.h"
#include "drv_node.h"
#include "drv_schemas.h"

#include "drover/drv_batch.h"
#include "drover/drv_limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    drv_http_server_t *server; // first: drv_http_node's hooks find it there
    const char *paths[2];
    char *path;
} http_t;

static const char *const s_media_types[] = {"application/x-ndjson", "application/json", "application/msgpack",
                                            "application/x-msgpack", NULL};

//  The records with their sender said (drv_node_put_peer), made again in the batch zone.
static msgpack_object *s_with_peer(drv_node_t *node, const msgpack_object *records, int n, const char *peer)
{
    msgpack_object *out = drv_node_alloc(node, (size_t)(n > 0 ? n : 1) * sizeof *out);
    memcpy(out, records, (size_t)(n > 0 ? n : 0) * sizeof *out);
    drv_node_put_peer(node, out, (size_t)(n > 0 ? n : 0), peer, strlen(peer));
    return out;
}

static void s_handle(void *arg, const drv_http_request_t *request, drv_http_reply_t *reply)
{
    drv_node_t *node = arg;
    char err[300];
    int n;
    bool taken = true;
    bool peer = request->peer && request->peer[0] && drv_node_wants_peer(node);
    if (strstr(request->media_type, "msgpack") && peer) { // decoded here, to say the sender in each record
        msgpack_object root;
        const msgpack_object *records;
        n = drv_batch_decode(request->body, request->size, drv_node_batch_zone(node), &root, &records, err, sizeof err);
        if (n < 0) {
            drv_node_count_refused(node);
        } else {
            taken = drv_node_emit_objects(node, s_with_peer(node, records, n, request->peer), (size_t)n);
        }
    } else if (strstr(request->media_type, "msgpack")) {
        n = drv_node_emit_packed(node, request->body, request->size, err, sizeof err);
    } else {
        bool ndjson = !strcmp(request->media_type, "application/x-ndjson");
        json_t *parsed = NULL;
        msgpack_object *records;
        n = drv_http_body_records(request->body, request->size, ndjson, drv_node_batch_zone(node), &parsed, &records,
                                  err, sizeof err);
        if (n < 0) {
            drv_node_count_refused(node);
        } else {
            records = peer ? s_with_peer(node, records, n, request->peer) : records;
            taken = drv_node_emit_objects(node, records, (size_t)n); // they point into parsed: freed after
        }
        json_decref(parsed);
    }
    if (n == DRV_NODE_FULL || !taken) {
        drv_http_reply_error(reply, 429, "unavailable", "the disk buffer is full; retry later");
        reply->retry_after_secs = 1;
    } else if (n < 0) {
        drv_http_reply_error(reply, 400, "invalid_request", "%s; nothing of this body was taken", err);
    } else {
        reply->status = 200;
        reply->body = malloc(40);
        reply->size = reply->body ? (size_t)snprintf(reply->body, 40, "{\"accepted\":%d}", n) : 0;
    }
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    http_t *self = calloc(1, sizeof *self);
    node->state = self;
    self->path = strdup(json_string_value(json_object_get(config, "path")));
    self->paths[0] = self->path;
    drv_http_config_t server = {.paths = self->paths, .media_types = s_media_types, .handler = s_handle};
    return drv_http_node_listen(node, &self->server, config, &server, err, errlen);
}

static void s_destroy(drv_node_t *node)
{
    http_t *self = node->state;
    if (!self) {
        return;
    }
    drv_http_server_destroy(&self->server);
    free(self->path);
    free(self);
}

const drv_node_kind_t drv_receiver_http = {
    .schema = &drv_schema_receiver_http,
    .init = s_init,
    DRV_HTTP_NODE_HOOKS,
    .destroy = s_destroy,
};
