/*  drv_http_server — see drv_http_server.h. libmicrohttpd runs without a
    thread of its own ("external polling" with epoll): the worker polls one
    descriptor and calls drv_http_server_run, so a request is answered on
    the core its instance is pinned to, between the instance's other work. */
#include "drv_http_server.h"
#include "drv_gzip.h"

#include <snappy-c.h>

#include "drover/drv_file.h"
#include "drover/drv_httpd.h"
#include "drover/drv_log.h"
#include "drover/drv_problems.h"
#include "drover/drv_time.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define RETRY_AFTER_SECS 1

typedef struct request_t request_t;
struct request_t {
    drv_httpd_req_t *req;
    drv_http_server_t *server;
    int64_t head_us; // mono µs its head arrived
    bool gzip;
    bool snappy;
    char media_type[64];
    drv_http_reply_t held; // ack: the answer, sent once input is settled
    int64_t input;
    bool holding;
    request_t *next_held;
};

struct drv_http_server_t {
    drv_httpd_t *httpd;       // the loop-driven server (common/drv_httpd)
    char *cert_pem, *key_pem; // HTTPS: the files' text, while the server runs
    drv_http_config_t config;
    request_t *held; // requests waiting for their input to settle
};

void drv_http_reply_error(drv_http_reply_t *reply, int status, const char *kind, const char *fmt, ...)
{
    char message[400];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    json_t *body = drv_problems_error(kind, message);
    free(reply->body);
    reply->status = status;
    reply->content_type = "application/json";
    reply->body = json_dumps(body, JSON_COMPACT);
    reply->size = reply->body ? strlen(reply->body) : 0;
    json_decref(body);
}

static void s_answer(request_t *r, drv_http_reply_t *reply, const char *allow)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(reply->size, reply->body ? reply->body : "", MHD_RESPMEM_MUST_COPY);
    free(reply->body);
    reply->body = NULL;
    if (resp) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                reply->content_type ? reply->content_type : "application/json");
        if (reply->retry_after_secs > 0) {
            char secs[16];
            snprintf(secs, sizeof secs, "%d", reply->retry_after_secs);
            MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, secs);
        }
        if (allow) {
            MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
        }
    }
    drv_httpd_answer(r->req, (unsigned int)reply->status, resp);
    if (r->server->config.answered) {
        r->server->config.answered(r->server->config.arg, (double)(drv_time_mono_us() - r->head_us) / 1e6);
    }
}

static void s_refuse(drv_http_server_t *self, request_t *r, int status, const char *kind, const char *message)
{
    drv_http_reply_t reply = {0};
    if (self->config.error) {
        self->config.error(r->media_type, status, kind, message, &reply);
    } else {
        drv_http_reply_error(&reply, status, kind, "%s", message);
    }
    reply.retry_after_secs = status == 429 || status == 503 ? RETRY_AFTER_SECS : 0;
    if ((status == 400 || status == 413 || status == 415) && self->config.refused) {
        self->config.refused(self->config.arg);
    }
    s_answer(r, &reply, status == 405 ? "POST" : NULL);
}

static int s_pushback(const drv_http_server_t *self)
{
    return self->config.pushback_status ? self->config.pushback_status : 429;
}

static const char *s_pushback_kind(const drv_http_server_t *self)
{
    return s_pushback(self) == 503 ? "unavailable" : "too_many_requests";
}

static bool s_listed(const char *const *list, const char *value)
{
    for (; list && *list; list++) {
        if (!strcmp(*list, value)) {
            return true;
        }
    }
    return false;
}

//  Only the head has arrived: refuse now what can be refused unread.
static void s_on_head(void *arg, drv_httpd_req_t *req)
{
    drv_http_server_t *self = arg;
    request_t *r = calloc(1, sizeof *r);
    if (!r) {
        drv_httpd_answer(req, 503, NULL); // no memory: the connection is closed
        return;
    }
    r->req = req;
    r->server = self;
    r->head_us = drv_time_mono_us();
    drv_httpd_set_user(req, r);
    //  First, so that every refusal can answer in the request's encoding.
    const char *type = drv_httpd_header(req, MHD_HTTP_HEADER_CONTENT_TYPE);
    size_t n = type ? strcspn(type, "; \t") : 0;
    for (size_t i = 0; i < n && i + 1 < sizeof r->media_type; i++) {
        r->media_type[i] = (char)tolower((unsigned char)type[i]);
    }
    if (strcmp(drv_httpd_method(req), "POST") != 0) {
        s_refuse(self, r, 405, "method_not_allowed", "only POST is served here");
        return;
    }
    if (!s_listed(self->config.paths, drv_httpd_url(req))) {
        char message[300];
        int at = snprintf(message, sizeof message, "no such path here; the paths served are:");
        for (const char *const *p = self->config.paths; *p && at < (int)sizeof message; p++) {
            at += snprintf(message + at, sizeof message - (size_t)at, " %s", *p);
        }
        s_refuse(self, r, 404, "not_found", message);
        return;
    }
    if (!s_listed(self->config.media_types, r->media_type)) {
        char message[300];
        int at = snprintf(message, sizeof message, "Content-Type must be one of:");
        for (const char *const *t = self->config.media_types; *t && at < (int)sizeof message; t++) {
            at += snprintf(message + at, sizeof message - (size_t)at, " %s", *t);
        }
        s_refuse(self, r, 415, "unsupported_media_type", message);
        return;
    }
    const char *encoding = drv_httpd_header(req, MHD_HTTP_HEADER_CONTENT_ENCODING);
    if (encoding && !strcasecmp(encoding, "gzip")) {
        r->gzip = true;
    } else if (encoding && self->config.snappy && !strcasecmp(encoding, "snappy")) {
        r->snappy = true;
    } else if (encoding && strcasecmp(encoding, "identity") != 0) {
        s_refuse(self, r, 415, "unsupported_media_type",
                 self->config.snappy ? "Content-Encoding must be snappy, gzip or identity"
                                     : "Content-Encoding must be gzip or identity");
        return;
    }
    const char *behind = self->config.backlogged ? self->config.backlogged(self->config.arg) : NULL;
    if (behind) {
        char message[200];
        snprintf(message, sizeof message, "%s; retry after the time Retry-After says", behind);
        s_refuse(self, r, s_pushback(self), s_pushback_kind(self), message);
        return;
    }
    if (drv_httpd_content_length(req) > (int64_t)self->config.max_body_bytes) {
        char message[100];
        snprintf(message, sizeof message, "request body larger than %zu bytes", self->config.max_body_bytes);
        s_refuse(self, r, 413, "payload_too_large", message);
        return;
    }
    //  Nothing is reserved from the declared length: the budget is charged as
    //  bytes arrive, so a client that declares 4 MiB and drips holds what it sent.
    if (!drv_conn_policy_body_fits(drv_httpd_policy(self->httpd), drv_httpd_body(req)->declared)) {
        s_refuse(self, r, s_pushback(self), s_pushback_kind(self), "too many request bodies in flight; retry");
    }
}

//  The whole body is here: decode it and let the handler answer.
static void s_on_body(void *arg, drv_httpd_req_t *req)
{
    drv_http_server_t *self = arg;
    request_t *r = drv_httpd_user(req);
    drv_http_upload_t *upload = drv_httpd_body(req);
    if (upload->too_large) {
        char message[100];
        snprintf(message, sizeof message, "request body larger than %zu bytes", self->config.max_body_bytes);
        s_refuse(self, r, 413, "payload_too_large", message);
        return;
    }
    if (upload->over_budget) {
        s_refuse(self, r, s_pushback(self), s_pushback_kind(self), "too many request bodies in flight; retry");
        return;
    }
    char *body = upload->data;
    size_t size = upload->len;
    char *inflated = NULL;
    if (r->gzip) {
        drv_gzip_result_t rc = drv_gzip_inflate(body ? body : "", size, self->config.max_body_bytes, &inflated, &size);
        if (rc == DRV_GZIP_TOO_LARGE) {
            char message[100];
            snprintf(message, sizeof message, "request body larger than %zu bytes once gunzipped",
                     self->config.max_body_bytes);
            s_refuse(self, r, 413, "payload_too_large", message);
            return;
        }
        if (rc != DRV_GZIP_OK) {
            s_refuse(self, r, 400, "invalid_request", "Content-Encoding says gzip; the body is not");
            return;
        }
        body = inflated;
    } else if (r->snappy) {
        //  The length a snappy body claims is checked before anything is
        //  made of it: a few bytes may claim gigabytes.
        size_t length = 0;
        if (snappy_uncompressed_length(body ? body : "", size, &length) != SNAPPY_OK) {
            s_refuse(self, r, 400, "invalid_request", "Content-Encoding says snappy; the body is not");
            return;
        }
        if (length > self->config.max_body_bytes) {
            char message[100];
            snprintf(message, sizeof message, "request body larger than %zu bytes once decompressed",
                     self->config.max_body_bytes);
            s_refuse(self, r, 413, "payload_too_large", message);
            return;
        }
        inflated = malloc(length + 1);
        if (!inflated || snappy_uncompress(body ? body : "", size, inflated, &length) != SNAPPY_OK) {
            free(inflated);
            s_refuse(self, r, 400, "invalid_request", "Content-Encoding says snappy; the body is not");
            return;
        }
        inflated[length] = 0;
        body = inflated;
        size = length;
    }
    char peer[64];
    drv_httpd_peer(req, peer, sizeof peer);
    drv_http_request_t request = {
        .path = drv_httpd_url(req), .media_type = r->media_type, .body = body ? body : "", .size = size, .peer = peer};
    drv_http_reply_t reply = {0};
    self->config.handler(self->config.arg, &request, &reply);
    free(inflated);
    if (self->config.ack && reply.status >= 200 && reply.status < 300) {
        //  Answered once what the request became is exported (left
        //  unanswered, the request waits off the client's clock).
        r->held = reply;
        r->input = self->config.input(self->config.arg);
        r->holding = true;
        r->next_held = self->held;
        self->held = r;
        return;
    }
    s_answer(r, &reply, NULL);
}

static void s_on_done(void *arg, drv_httpd_req_t *req)
{
    drv_http_server_t *self = arg;
    request_t *r = drv_httpd_user(req);
    if (!r) {
        return;
    }
    if (r->holding) {
        for (request_t **link = &self->held; *link; link = &(*link)->next_held) {
            if (*link == r) {
                *link = r->next_held; // the connection died while held
                break;
            }
        }
    }
    free(r->held.body);
    free(r);
}

void drv_http_server_settled(drv_http_server_t *self, int64_t upto)
{
    request_t **link = &self->held;
    while (*link) {
        request_t *r = *link;
        if (r->input <= upto) {
            *link = r->next_held;
            r->holding = false;
            if (self->config.gave_up && self->config.gave_up(self->config.arg, r->input)) {
                //  Settled, but not delivered: an exporter gave some of its records up.
                free(r->held.body);
                r->held = (drv_http_reply_t){0};
                s_refuse(self, r, 502, "not_delivered",
                         "records of this request were given up by an exporter (its errors and the log say why)");
                continue;
            }
            s_answer(r, &r->held, NULL);
        } else {
            link = &r->next_held;
        }
    }
}

drv_http_server_t *drv_http_server_new(int listen_fd, const drv_http_config_t *config, char *err, size_t errlen)
{
    drv_http_server_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(err, errlen, "out of memory");
        close(listen_fd);
        return NULL;
    }
    self->config = *config;
    if (config->cert_file && config->key_file) {
        size_t size;
        char why[300];
        self->cert_pem = drv_file_read(config->cert_file, 1 << 20, &size, why, sizeof why);
        self->key_pem = self->cert_pem ? drv_file_read(config->key_file, 1 << 20, &size, why, sizeof why) : NULL;
        if (!self->key_pem) {
            snprintf(err, errlen, "tls: %s", why);
            free(self->cert_pem);
            free(self);
            close(listen_fd);
            return NULL;
        }
    }
    drv_httpd_config_t httpd = {
        .name = "http receiver",
        .listen_fd = listen_fd,
        .limits = {.per_address = config->connections.per_address,
                   .total = config->connections.total,
                   .request_ms = config->connections.request_ms,
                   .idle_ms = config->connections.idle_ms,
                   .body_budget = config->buffer_bytes},
        .idle_secs = (unsigned)((config->connections.idle_ms + 999) / 1000),
        .max_body_bytes = config->max_body_bytes,
        .tls_cert_pem = self->cert_pem,
        .tls_key_pem = self->key_pem,
        .on_head = s_on_head,
        .on_body = s_on_body,
        .on_done = s_on_done,
        .arg = self,
    };
    char why[200];
    self->httpd = drv_httpd_new(&httpd, why, sizeof why);
    if (!self->httpd) {
        snprintf(err, errlen, "cannot start the HTTP server on the inherited socket: %s%s", why,
                 self->cert_pem ? " (is tls a matching PEM certificate and key?)" : "");
        free(self->cert_pem);
        free(self->key_pem);
        free(self);
        return NULL;
    }
    return self;
}

void drv_http_server_destroy(drv_http_server_t **self_p)
{
    drv_http_server_t *self = *self_p;
    if (!self) {
        return;
    }
    *self_p = NULL;
    drv_httpd_destroy(&self->httpd, 0);
    free(self->cert_pem);
    free(self->key_pem);
    free(self);
}

int drv_http_server_fd(drv_http_server_t *self)
{
    return drv_httpd_fd(self->httpd);
}

int64_t drv_http_server_timeout_ms(drv_http_server_t *self)
{
    return drv_httpd_timeout_ms(self->httpd);
}

void drv_http_server_run(drv_http_server_t *self)
{
    drv_httpd_run(self->httpd);
}

void drv_http_server_drain(drv_http_server_t *self)
{
    drv_httpd_drain(self->httpd);
}
