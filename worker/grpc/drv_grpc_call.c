/*  drv_grpc_call — one unary call on one stream: its head checked as it
    arrives, its message kept until the stream ends (charged to the body
    budget), the handler run, and the answer written: headers, the framed
    message and trailers, or trailers only. */
#include "drv_grpc_internal.h"

#include "drover/drv_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static ssize_t s_read_body(nghttp2_session *session, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
                           nghttp2_data_source *source, void *arg)
{
    (void)id;
    (void)arg;
    stream_t *s = source->ptr;
    size_t total = DRV_GRPC_PREFIX + s->reply.size;
    size_t n = 0;
    while (n < length && s->sent < total) {
        size_t at = s->sent;
        const uint8_t *from =
            at < DRV_GRPC_PREFIX ? s->prefix + at : (const uint8_t *)s->reply.body + at - DRV_GRPC_PREFIX;
        size_t left = at < DRV_GRPC_PREFIX ? DRV_GRPC_PREFIX - at : total - at;
        size_t take = left < length - n ? left : length - n;
        memcpy(buf + n, from, take);
        n += take;
        s->sent += take;
    }
    if (s->sent == total) {
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nghttp2_nv trailers[] = {
            {(uint8_t *)"grpc-status", (uint8_t *)"0", 11, 1, NGHTTP2_NV_FLAG_NONE},
        };
        if (nghttp2_submit_trailer(session, s->id, trailers, 1) != 0) {
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }
    }
    return (ssize_t)n;
}

#define NV(name, value, len)                                                                                           \
    {                                                                                                                  \
        (uint8_t *)(name), (uint8_t *)(value), sizeof(name) - 1, (len), NGHTTP2_NV_FLAG_NONE                           \
    }

//  Submits the stream's answer: OK with its message and trailers, or
//  trailers only (a status, why, RetryInfo), or an HTTP refusal.
void drv_grpc_call_submit(stream_t *s)
{
    nghttp2_session *session = s->conn->session;
    s->answered = true;
    const drv_grpc_config_t *config = &s->conn->server->config;
    if (config->answered) {
        config->answered(config->arg, (double)(drv_time_mono_us() - s->head_us) / 1e6);
    }
    const char *type = "application/grpc";
    if (s->http_status) {
        char status[4];
        snprintf(status, sizeof status, "%d", s->http_status);
        nghttp2_nv head[] = {NV(":status", status, 3), NV("content-type", "text/plain", 10),
                             NV("grpc-status", s->status_text, strlen(s->status_text)),
                             NV("grpc-message", s->message, strlen(s->message))};
        nghttp2_submit_response(session, s->id, head, 4, NULL);
        return;
    }
    if (s->reply.status == DRV_GRPC_OK) {
        drv_grpc_prefix(s->prefix, false, (uint32_t)s->reply.size);
        nghttp2_nv head[] = {NV(":status", "200", 3), NV("content-type", type, strlen(type)),
                             NV("grpc-accept-encoding", "identity,gzip", 13)};
        nghttp2_data_provider body = {.source.ptr = s, .read_callback = s_read_body};
        nghttp2_submit_response(session, s->id, head, 3, &body);
        return;
    }
    //  Trailers-Only: one HEADERS frame that ends the stream.
    snprintf(s->status_text, sizeof s->status_text, "%d", s->reply.status);
    drv_grpc_message_encode(s->reply.message, s->message, sizeof s->message);
    nghttp2_nv head[5] = {NV(":status", "200", 3), NV("content-type", type, strlen(type)),
                          NV("grpc-status", s->status_text, strlen(s->status_text)),
                          NV("grpc-message", s->message, strlen(s->message))};
    size_t n = 4;
    if (s->reply.retry_ms > 0) {
        s->details = drv_grpc_status_details(s->reply.status, s->reply.message, s->reply.retry_ms);
        if (s->details) {
            head[n++] = (nghttp2_nv)NV("grpc-status-details-bin", s->details, strlen(s->details));
        }
    }
    nghttp2_submit_response(session, s->id, head, n, NULL);
}

static void s_drop_body(stream_t *s)
{
    drv_conn_policy_give_body(s->conn->server->policy, s->conn->policy, s->cap);
    free(s->body);
    s->body = NULL;
    s->len = s->cap = 0;
}

void drv_grpc_call_overdue(stream_t *s)
{
    s_drop_body(s);
    s->answered = true; // what it still sends is dropped
    nghttp2_submit_rst_stream(s->conn->session, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_CANCEL);
}

static void s_refuse(stream_t *s, int status, int64_t retry_ms, const char *why)
{
    s_drop_body(s);
    s->reply.status = status;
    s->reply.retry_ms = retry_ms;
    snprintf(s->reply.message, sizeof s->reply.message, "%s", why);
    drv_grpc_call_submit(s);
}

static void s_refuse_http(stream_t *s, int http_status, const char *why)
{
    s->http_status = http_status;
    s->reply.status = http_status == 405 || http_status == 415 ? DRV_GRPC_UNIMPLEMENTED : DRV_GRPC_INTERNAL;
    snprintf(s->status_text, sizeof s->status_text, "%d", s->reply.status);
    drv_grpc_message_encode(why, s->message, sizeof s->message);
    drv_grpc_call_submit(s);
}

static void s_unhold(stream_t *s)
{
    if (!s->holding) {
        return;
    }
    for (stream_t **link = &s->conn->server->held; *link; link = &(*link)->next_held) {
        if (*link == s) {
            *link = s->next_held;
            break;
        }
    }
    s->holding = false;
}

//  ---- calls

void drv_grpc_call_free(stream_t *s)
{
    conn_t *c = s->conn;
    s_unhold(s);
    if (s->prev) {
        s->prev->next = s->next;
    } else {
        c->streams = s->next;
    }
    if (s->next) {
        s->next->prev = s->prev;
    }
    s_drop_body(s);
    free(s->reply.body);
    free(s->details);
    free(s);
}

//  The head is whole: refuse now what can be refused unread.
static void s_head(stream_t *s)
{
    drv_grpc_server_t *self = s->conn->server;
    if (s->http_status == 431) {
        char why[80];
        snprintf(why, sizeof why, "header block larger than %d bytes", HEADER_BYTES);
        s_refuse_http(s, 431, why);
    } else if (!s->post) {
        s_refuse_http(s, 405, "gRPC calls are POST");
    } else if (!s->grpc) {
        s_refuse_http(s, 415, "content-type must be application/grpc (or application/grpc+proto)");
    } else if (s->path < 0) {
        s_refuse(s, DRV_GRPC_UNIMPLEMENTED, 0, "no such method here");
    } else if (s->bad_encoding) {
        s_refuse(s, DRV_GRPC_UNIMPLEMENTED, 0, "grpc-encoding must be gzip or identity");
    } else {
        const char *behind = self->config.backlogged ? self->config.backlogged(self->config.arg) : NULL;
        if (behind) {
            char why[200];
            snprintf(why, sizeof why, "%s; retry after the delay RetryInfo says", behind);
            s_refuse(s, DRV_GRPC_RESOURCE_EXHAUSTED, RETRY_MS, why);
        }
    }
}

//  The message is whole: decode it and let the handler answer.
static void s_call(stream_t *s)
{
    drv_grpc_server_t *self = s->conn->server;
    const void *message;
    size_t size;
    char *inflated;
    char why[300];
    int rc = drv_grpc_unframe(s->body ? s->body : (uint8_t *)"", s->len, s->gzip, self->config.max_message_bytes,
                              &message, &size, &inflated, why, sizeof why);
    if (rc != DRV_GRPC_OK) {
        s_refuse(s, rc, 0, why);
        return;
    }
    char peer[64];
    drv_conn_peer(s->conn->policy, peer, sizeof peer);
    drv_grpc_request_t request = {.path = s->path, .message = message, .size = size, .peer = peer};
    self->config.handler(self->config.arg, &request, &s->reply);
    free(inflated);
    s_drop_body(s); // the handler is done with it
    if (self->config.ack && s->reply.status == DRV_GRPC_OK) {
        s->input = self->config.input(self->config.arg);
        s->holding = true;
        s->next_held = self->held;
        self->held = s;
        return;
    }
    drv_grpc_call_submit(s);
}

static int s_on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *arg)
{
    conn_t *c = arg;
    c->block_bytes = 0; // a new header block (a request's, or trailers)
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
        return 0;
    }
    if (c->goaway && frame->hd.stream_id > c->last_id) {
        //  Past the GOAWAY's last stream (it is queued, not yet sent): not
        //  taken, so that the client may send it again elsewhere.
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_REFUSED_STREAM);
        return 0;
    }
    stream_t *s = calloc(1, sizeof *s);
    if (!s) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; // the stream is reset; the client may retry
    }
    s->conn = c;
    s->id = frame->hd.stream_id;
    s->head_us = drv_time_mono_us();
    c->progress_ms = s->head_us / 1000;
    s->path = -1;
    s->next = c->streams;
    if (c->streams) {
        c->streams->prev = s;
    }
    c->streams = s;
    nghttp2_session_set_stream_user_data(session, s->id, s);
    return 0;
}

static bool s_is(const uint8_t *value, size_t len, const char *text)
{
    return len == strlen(text) && !memcmp(value, text, len);
}

static int s_on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                       const uint8_t *value, size_t valuelen, uint8_t flags, void *arg)
{
    (void)flags;
    conn_t *c = arg;
    //  What HPACK makes of one header block, trailers too: past
    //  HEADER_BLOCK_BYTES it is a bomb (a few bytes referring to a large
    //  table entry over and over), and the connection ends here rather than
    //  decode the rest (docs/security.md).
    c->block_bytes += namelen + valuelen + 32;
    if (c->block_bytes > HEADER_BLOCK_BYTES) {
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    stream_t *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!s || frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
        return 0; // trailers of a request: nothing in them matters
    }
    s->header_bytes += namelen + valuelen + 32;
    if (s->header_bytes > HEADER_BYTES) {
        s->http_status = 431; // the rest is decoded (HPACK must be) and ignored
        return 0;
    }
    if (s_is(name, namelen, ":method")) {
        s->post = s_is(value, valuelen, "POST");
    } else if (s_is(name, namelen, ":path")) {
        for (int i = 0; s->conn->server->config.paths[i]; i++) {
            if (s_is(value, valuelen, s->conn->server->config.paths[i])) {
                s->path = i;
            }
        }
    } else if (s_is(name, namelen, "content-type")) {
        s->grpc = (valuelen >= 16 && !strncasecmp((const char *)value, "application/grpc", 16) &&
                   (valuelen == 16 || value[16] == '+' || value[16] == ';'));
    } else if (s_is(name, namelen, "grpc-encoding")) {
        s->gzip = s_is(value, valuelen, "gzip");
        s->bad_encoding = !s->gzip && !s_is(value, valuelen, "identity");
    }
    return 0;
}

static int s_on_data(nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *arg)
{
    (void)flags;
    (void)arg;
    stream_t *s = nghttp2_session_get_stream_user_data(session, id);
    if (!s || s->answered || s->holding) {
        return 0; // refused already: what it still sends is dropped
    }
    drv_grpc_server_t *self = s->conn->server;
    size_t limit = self->config.max_message_bytes + DRV_GRPC_PREFIX;
    if (s->len + len > limit) {
        char why[120];
        snprintf(why, sizeof why, "gRPC message larger than %zu bytes", self->config.max_message_bytes);
        s_refuse(s, DRV_GRPC_RESOURCE_EXHAUSTED, 0, why);
        return 0;
    }
    s->conn->progress_ms = drv_time_mono_ms(); // message bytes: the only progress that holds the deadline off
    if (s->len + len > s->cap) {
        size_t cap = s->cap ? s->cap : FIRST_BODY_BYTES;
        while (cap < s->len + len) {
            cap *= 2;
        }
        cap = cap > limit ? limit : cap;
        //  Charged as bytes arrive (what a prefix declares reserves nothing).
        if (!drv_conn_policy_take_body(self->policy, s->conn->policy, cap - s->cap)) {
            s_refuse(s, DRV_GRPC_RESOURCE_EXHAUSTED, RETRY_MS, "too many messages in flight; retry");
            return 0;
        }
        uint8_t *body = realloc(s->body, cap);
        if (!body) {
            drv_conn_policy_give_body(self->policy, s->conn->policy, cap - s->cap);
            s_refuse(s, DRV_GRPC_UNAVAILABLE, RETRY_MS, "out of memory; retry");
            return 0;
        }
        s->body = body;
        s->cap = cap;
    }
    memcpy(s->body + s->len, data, len);
    s->len += len;
    return 0;
}

static int s_on_frame(nghttp2_session *session, const nghttp2_frame *frame, void *arg)
{
    conn_t *c = arg;
    if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK) && c->notice_ms && !c->goaway) {
        drv_grpc_conn_goaway(c); // the notice's round trip is over: what the client started is here
        return 0;
    }
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) {
        return 0;
    }
    stream_t *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!s) {
        return 0;
    }
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
        s_head(s);
    }
    if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) && !s->answered && !s->holding) {
        s_call(s);
    }
    return 0;
}

static int s_on_close(nghttp2_session *session, int32_t id, uint32_t error_code, void *arg)
{
    (void)error_code;
    (void)arg;
    stream_t *s = nghttp2_session_get_stream_user_data(session, id);
    if (s) {
        nghttp2_session_set_stream_user_data(session, id, NULL);
        drv_grpc_call_free(s);
    }
    return 0;
}

void drv_grpc_call_callbacks(nghttp2_session_callbacks *callbacks)
{
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, s_on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, s_on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, s_on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, s_on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, s_on_close);
}
