/*  receiver:otlp — OTLP/HTTP: POST /v1/logs, /v1/traces and /v1/metrics,
    protobuf or JSON, gzip'd or not; one record per LogRecord, Span or data
    point (docs/operations.md's mappings, drv_otlp_records.c,
    drv_otlp_metrics.c). Answered as the OTLP/HTTP specification
    says: 200 with an Export…ServiceResponse in the request's encoding,
    whose partial_success counts the records refused (a duplicate key) and
    says why; 400 for a body that is not a request; 404, 413, 415, 429 from
    the server (drv_http_server.h), which also says how the shared listening
    socket is served and drained. Every refusal's body is a google.rpc.Status
    in the request's encoding (JSON when it had none we take). As with receiver:http, records are
    exported before the answer.

    With grpc_endpoint, OTLP/gRPC too (docs/operations.md, OTLP): the unary Export of
    the three collector services on a second socket droverd bound, served
    by drv_grpc_server beside the HTTP server; the node polls both through
    one epoll descriptor of its own. The same decode, the same records;
    refusals as gRPC status codes (INVALID_ARGUMENT, RESOURCE_EXHAUSTED and
    UNAVAILABLE with RetryInfo). tls {cert_file, key_file} serves the gRPC
    socket over TLS (ALPN h2). */
#include "drv_http_node.h"
#include "drv_node.h"
#include "drv_schemas.h"
#include "drv_otlp.h"
#include "drv_otlp_json.h"
#include "drv_otlp_records.h"

#include "drv_grpc_frame.h"

#include "drover/drv_limits.h"
#include "drover/drv_listen.h"
#include "drover/drv_time.h"
#include "drover/drv_utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

typedef struct {
    drv_http_server_t *server; // first: drv_http_node's hooks find it there
    const char *paths[4];
    drv_grpc_server_t *grpc; // NULL: no grpc_endpoint
    const char *grpc_paths[4];
    drv_otlp_signal_t grpc_signals[3];
    int epoll_fd; // with grpc: both servers' descriptors
} otlp_t;

static const char *const s_media_types[] = {"application/x-protobuf", "application/json", NULL};
static const char *const s_signal_names[] = {"logs", "traces", "metrics"};
static const char *const s_signal_paths[] = {"/v1/logs", "/v1/traces", "/v1/metrics"};
static const char *const s_grpc_paths[] = {"/opentelemetry.proto.collector.logs.v1.LogsService/Export",
                                           "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                                           "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"};

//  The Export…ServiceResponse, in the request's encoding.
static char *s_response_pb(drv_otlp_signal_t signal, int64_t rejected, const char *why, size_t *size);

static void s_respond(drv_http_reply_t *reply, drv_otlp_signal_t signal, bool json, int64_t rejected, const char *why)
{
    reply->status = 200;
    if (json) {
        reply->content_type = "application/json";
        const char *count = signal == DRV_OTLP_LOGS     ? "rejectedLogRecords"
                            : signal == DRV_OTLP_TRACES ? "rejectedSpans"
                                                        : "rejectedDataPoints";
        json_t *body = rejected == 0 ? json_object()
                                     : json_pack("{s:{s:I, s:s}}", "partialSuccess", count, (json_int_t)rejected,
                                                 "errorMessage", why);
        reply->body = json_dumps(body, JSON_COMPACT);
        reply->size = reply->body ? strlen(reply->body) : 0;
        json_decref(body);
        return;
    }
    reply->content_type = "application/x-protobuf";
    reply->body = s_response_pb(signal, rejected, why, &reply->size);
}

//  The Export…ServiceResponse in protobuf, malloc'd (NULL out of memory).
static char *s_response_pb(drv_otlp_signal_t signal, int64_t rejected, const char *why, size_t *size)
{
    ProtobufCMessage *response;
    otlp_logs_response_t logs = OPENTELEMETRY__PROTO__COLLECTOR__LOGS__V1__EXPORT_LOGS_SERVICE_RESPONSE__INIT;
    otlp_logs_partial_t logs_partial = OPENTELEMETRY__PROTO__COLLECTOR__LOGS__V1__EXPORT_LOGS_PARTIAL_SUCCESS__INIT;
    otlp_traces_response_t traces = OPENTELEMETRY__PROTO__COLLECTOR__TRACE__V1__EXPORT_TRACE_SERVICE_RESPONSE__INIT;
    otlp_traces_partial_t traces_partial =
        OPENTELEMETRY__PROTO__COLLECTOR__TRACE__V1__EXPORT_TRACE_PARTIAL_SUCCESS__INIT;
    otlp_metrics_response_t metrics =
        OPENTELEMETRY__PROTO__COLLECTOR__METRICS__V1__EXPORT_METRICS_SERVICE_RESPONSE__INIT;
    otlp_metrics_partial_t metrics_partial =
        OPENTELEMETRY__PROTO__COLLECTOR__METRICS__V1__EXPORT_METRICS_PARTIAL_SUCCESS__INIT;
    if (signal == DRV_OTLP_METRICS) {
        metrics_partial.rejected_data_points = rejected;
        metrics_partial.error_message = (char *)why;
        metrics.partial_success = rejected ? &metrics_partial : NULL;
        response = &metrics.base;
    } else if (signal == DRV_OTLP_LOGS) {
        logs_partial.rejected_log_records = rejected;
        logs_partial.error_message = (char *)why;
        logs.partial_success = rejected ? &logs_partial : NULL;
        response = &logs.base;
    } else {
        traces_partial.rejected_spans = rejected;
        traces_partial.error_message = (char *)why;
        traces.partial_success = rejected ? &traces_partial : NULL;
        response = &traces.base;
    }
    *size = protobuf_c_message_get_packed_size(response);
    char *body = malloc(*size + 1);
    if (body) {
        protobuf_c_message_pack(response, (uint8_t *)body);
    }
    return body;
}

//  A refusal as OTLP/HTTP answers one: a google.rpc.Status, protobuf for a
//  protobuf request, else JSON; its code the gRPC one the status stands for.
static void s_error(const char *media_type, int status, const char *kind, const char *message, drv_http_reply_t *reply)
{
    (void)kind;
    otlp_status_body_t body = GOOGLE__RPC__STATUS__INIT;
    body.code = status == 429 ? 8 : status == 503 ? 14 : 3; // RESOURCE_EXHAUSTED, UNAVAILABLE, INVALID_ARGUMENT
    body.message = (char *)message;
    reply->status = status;
    free(reply->body);
    if (!strcmp(media_type, "application/x-protobuf")) {
        reply->content_type = "application/x-protobuf";
        reply->size = google__rpc__status__get_packed_size(&body);
        reply->body = malloc(reply->size + 1);
        if (reply->body) {
            google__rpc__status__pack(&body, (uint8_t *)reply->body);
        }
        return;
    }
    char *clean = drv_utf8_sanitize(message, strlen(message)); // it may quote what the client sent
    json_t *doc = json_pack("{s:i, s:s}", "code", body.code, "message", clean ? clean : "");
    free(clean);
    reply->content_type = "application/json";
    reply->body = json_dumps(doc, JSON_COMPACT);
    reply->size = reply->body ? strlen(reply->body) : 0;
    json_decref(doc);
}

//  A request's body decoded (protobuf or JSON) into *otlp; its records
//  built as objects in the batch zone. Returns the records (rejected ones
//  counted in *rejected, why in why), DRV_OTLP_NO_MEMORY, or -1 with the
//  reason in why (*decoded says whether otlp must be freed).
static int s_records(drv_node_t *node, drv_otlp_signal_t signal, bool json, const void *body, size_t size,
                     uint64_t observed_ns, drv_otlp_request_t *otlp, bool *decoded, msgpack_object **records,
                     int64_t *rejected, char *why, size_t whylen)
{
    char err[300];
    *decoded = false;
    int rc = json ? drv_otlp_json_parse(signal, body, size, otlp, err, sizeof err)
                  : drv_otlp_unpack(signal, body, size, otlp, err, sizeof err);
    if (rc != 0) {
        snprintf(why, whylen, "not an OTLP %s export request: %s", s_signal_names[signal], err);
        return rc == DRV_OTLP_NO_MEMORY ? DRV_OTLP_NO_MEMORY : -1;
    }
    *decoded = true;
    *rejected = 0;
    otlp->observed_ns = observed_ns;
    return drv_otlp_to_objects(otlp, drv_node_batch_zone(node), records, rejected, why, whylen);
}

//  What goes into a disk buffer ahead of the body: 'P', the signal and the
//  encoding, so that replay knows how to read it, when it was taken (8
//  bytes, little-endian ns: the records' observed time), and the sender's
//  address (a length byte, then its text; 0 when not wanted). 'O' (what
//  earlier versions wrote): the first three alone.
enum { RAW_MAGIC = 'O', RAW_PEER_MAGIC = 'P', RAW_HEAD = 3, RAW_PEER_HEAD = RAW_HEAD + 8 + 1 };

typedef enum { TAKEN, NO_MEMORY, FULL, INVALID } outcome_t;

//  One export request, from either transport: decoded, its records handed
//  on, and what became of it (rejected records counted in *rejected; why
//  says why, for those and for INVALID).
static outcome_t s_take(drv_node_t *node, drv_otlp_signal_t signal, bool json, const void *body, size_t size,
                        const char *peer, int64_t *rejected, char *why, size_t whylen)
{
    drv_otlp_request_t otlp;
    bool decoded;
    msgpack_object *records;
    *rejected = 0;
    uint64_t now = (uint64_t)drv_time_wall_ns();
    int n = s_records(node, signal, json, body, size, now, &otlp, &decoded, &records, rejected, why, whylen);
    size_t peer_len = peer && drv_node_wants_peer(node) ? strlen(peer) : 0;
    peer_len = peer_len < 256 ? peer_len : 0;
    unsigned char head[RAW_PEER_HEAD + 255] = {RAW_PEER_MAGIC, (unsigned char)signal, json};
    for (int i = 0; i < 8; i++) {
        head[RAW_HEAD + i] = (unsigned char)(now >> (8 * i));
    }
    head[RAW_PEER_HEAD - 1] = (unsigned char)peer_len;
    memcpy(head + RAW_PEER_HEAD, peer ? peer : "", peer_len);
    if (n > 0) {
        drv_node_put_peer(node, records, (size_t)n, peer, peer_len);
    }
    struct iovec raw[2] = {{head, RAW_PEER_HEAD + peer_len}, {(void *)body, size}};
    bool taken = n <= 0 || drv_node_emit_input(node, raw, 2, records, (size_t)n); // they point into otlp
    if (decoded) {
        drv_otlp_request_free(&otlp);
    }
    if (n == DRV_OTLP_NO_MEMORY) {
        return NO_MEMORY;
    }
    if (!taken) {
        return FULL;
    }
    if (n < 0 || *rejected > 0) {
        drv_node_count_refused(node);
    }
    return n < 0 ? INVALID : TAKEN;
}

static void s_handle(void *arg, const drv_http_request_t *request, drv_http_reply_t *reply)
{
    drv_node_t *node = arg;
    drv_otlp_signal_t signal = DRV_OTLP_LOGS;
    while (signal < DRV_OTLP_METRICS && strcmp(request->path, s_signal_paths[signal]) != 0) {
        signal++;
    }
    bool json = !strcmp(request->media_type, "application/json");
    int64_t rejected;
    char why[400];
    switch (s_take(node, signal, json, request->body, request->size, request->peer, &rejected, why, sizeof why)) {
    case NO_MEMORY:
        s_error(request->media_type, 503, "unavailable", "out of memory; retry", reply);
        reply->retry_after_secs = 1;
        return;
    case FULL:
        s_error(request->media_type, 429, "unavailable", "the disk buffer is full; retry later", reply);
        reply->retry_after_secs = 1;
        return;
    case INVALID:
        s_error(request->media_type, 400, "invalid_request", why, reply);
        return;
    case TAKEN:
        s_respond(reply, signal, json, rejected, why);
    }
}

//  The same over gRPC: the message is always protobuf.
static void s_grpc_handle(void *arg, const drv_grpc_request_t *request, drv_grpc_reply_t *reply)
{
    drv_node_t *node = arg;
    otlp_t *self = node->state;
    drv_otlp_signal_t signal = self->grpc_signals[request->path];
    int64_t rejected;
    switch (s_take(node, signal, false, request->message, request->size, request->peer, &rejected, reply->message,
                   sizeof reply->message)) {
    case NO_MEMORY:
        reply->status = DRV_GRPC_UNAVAILABLE;
        reply->retry_ms = 1000;
        snprintf(reply->message, sizeof reply->message, "out of memory; retry");
        return;
    case FULL:
        reply->status = DRV_GRPC_RESOURCE_EXHAUSTED;
        reply->retry_ms = 1000;
        snprintf(reply->message, sizeof reply->message, "the disk buffer is full; retry later");
        return;
    case INVALID:
        reply->status = DRV_GRPC_INVALID_ARGUMENT;
        return;
    case TAKEN:
        reply->status = DRV_GRPC_OK;
        reply->body = s_response_pb(signal, rejected, reply->message, &reply->size);
        if (!reply->body) {
            reply->status = DRV_GRPC_UNAVAILABLE;
            reply->retry_ms = 1000;
            snprintf(reply->message, sizeof reply->message, "out of memory; retry");
        }
    }
}

//  A request read back from a disk buffer: its records made again and handed on.
static int s_replay(drv_node_t *node, const void *data, size_t size)
{
    const unsigned char *head = data;
    if (size < RAW_HEAD || (head[0] != RAW_MAGIC && head[0] != RAW_PEER_MAGIC) || head[1] > DRV_OTLP_METRICS) {
        return -1;
    }
    size_t skip = RAW_HEAD, peer_len = 0;
    uint64_t observed = (uint64_t)drv_time_wall_ns(); // an 'O' entry does not say when it was taken
    if (head[0] == RAW_PEER_MAGIC) {
        if (size < RAW_PEER_HEAD) {
            return -1;
        }
        observed = 0;
        for (int i = 0; i < 8; i++) {
            observed |= (uint64_t)head[RAW_HEAD + i] << (8 * i);
        }
        peer_len = head[RAW_PEER_HEAD - 1];
        skip = RAW_PEER_HEAD + peer_len;
        if (size < skip) {
            return -1;
        }
    }
    drv_otlp_request_t otlp;
    bool decoded;
    msgpack_object *records;
    int64_t rejected;
    char why[400];
    int n = s_records(node, (drv_otlp_signal_t)head[1], head[2] != 0, head + skip, size - skip, observed, &otlp,
                      &decoded, &records, &rejected, why, sizeof why);
    if (n > 0) {
        drv_node_put_peer(node, records, (size_t)n, (const char *)head + RAW_PEER_HEAD, peer_len);
    }
    if (n > 0) {
        drv_node_forward(node, records, (size_t)n);
    }
    if (decoded) {
        drv_otlp_request_free(&otlp);
    }
    return n < 0 ? -1 : n;
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    otlp_t *self = calloc(1, sizeof *self);
    node->state = self;
    size_t n = 0;
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(config, "signals"), i, s)
    {
        for (int k = 0; k <= DRV_OTLP_METRICS && n < 3; k++) {
            bool listed = false;
            for (size_t j = 0; j < n; j++) {
                listed |= self->paths[j] == s_signal_paths[k];
            }
            if (!listed && !strcmp(json_string_value(s), s_signal_names[k])) {
                self->paths[n++] = s_signal_paths[k];
            }
        }
    }
    self->epoll_fd = -1;
    drv_http_config_t server = {
        .paths = self->paths, .media_types = s_media_types, .handler = s_handle, .error = s_error};
    if (drv_http_node_listen(node, &self->server, config, &server, err, errlen) != 0) {
        return -1;
    }
    if (!json_is_string(json_object_get(config, "grpc_endpoint"))) {
        return 0;
    }
    for (size_t k = 0; k < n; k++) {
        int signal = 0;
        while (s_signal_paths[signal] != self->paths[k]) {
            signal++;
        }
        self->grpc_paths[k] = s_grpc_paths[signal];
        self->grpc_signals[k] = (drv_otlp_signal_t)signal;
    }
    drv_grpc_config_t grpc = {.paths = self->grpc_paths, .handler = s_grpc_handle};
    if (drv_http_node_listen_grpc(node, &self->grpc, config, &grpc, err, errlen) != 0) {
        return -1;
    }
    //  One descriptor for the worker to poll: an epoll set of both servers' own.
    self->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    int fds[2] = {drv_http_server_fd(self->server), drv_grpc_server_fd(self->grpc)};
    for (int i = 0; i < 2; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
        if (self->epoll_fd < 0 || epoll_ctl(self->epoll_fd, EPOLL_CTL_ADD, fds[i], &ev) != 0) {
            snprintf(err, errlen, "node %s: cannot poll both servers", node->id);
            return -1;
        }
    }
    return 0;
}

//  Node hooks: those of drv_http_node, and the gRPC server's beside them.
static int s_fd(drv_node_t *node)
{
    otlp_t *self = node->state;
    if (!self || !self->grpc) {
        return drv_http_node_fd(node);
    }
    return drv_http_node_fd(node) < 0 && drv_grpc_server_fd(self->grpc) < 0 ? -1 : self->epoll_fd;
}

static int s_readable(drv_node_t *node)
{
    otlp_t *self = node->state;
    drv_http_node_readable(node);
    if (self && self->grpc) {
        drv_grpc_server_run(self->grpc); // each server looks at its own descriptor: the set needs no reading
    }
    return 0;
}

static int64_t s_timeout_ms(drv_node_t *node)
{
    otlp_t *self = node->state;
    int64_t http = drv_http_node_timeout_ms(node);
    int64_t grpc = self && self->grpc ? drv_grpc_server_timeout_ms(self->grpc) : -1;
    return http < 0 ? grpc : grpc < 0 || http < grpc ? http : grpc;
}

static void s_drain(drv_node_t *node)
{
    otlp_t *self = node->state;
    drv_http_node_drain(node);
    if (self && self->grpc) {
        drv_grpc_server_drain(self->grpc);
    }
}

static void s_settled(drv_node_t *node, int64_t upto)
{
    otlp_t *self = node->state;
    drv_http_node_settled(node, upto);
    if (self && self->grpc) {
        drv_grpc_server_settled(self->grpc, upto);
    }
}

static void s_destroy(drv_node_t *node)
{
    otlp_t *self = node->state;
    if (!self) {
        return;
    }
    drv_http_server_destroy(&self->server);
    drv_grpc_server_destroy(&self->grpc);
    if (self->epoll_fd >= 0) {
        close(self->epoll_fd);
    }
    free(self);
}

const drv_node_kind_t drv_receiver_otlp = {
    .schema = &drv_schema_receiver_otlp,
    .init = s_init,
    .fd = s_fd,
    .readable = s_readable,
    .timeout_ms = s_timeout_ms,
    .drain = s_drain,
    .settled = s_settled,
    .replay = s_replay,
    .destroy = s_destroy,
};
