/*  drv_http_server — see drv_http_server.h. libmicrohttpd runs without a
    thread of its own ("external polling" with epoll): the worker polls one
    descriptor and calls drv_http_server_run, so a request is answered on
    the core its instance is pinned to, between the instance's other work. */
#include "drv_http_server.h"
#include "drv_gzip.h"
#include "drv_http_upload.h"

#include "drover/drv_conn_policy.h"
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

#define IDLE_SECS 30          // a connection with nothing to say is closed after this
#define DRAIN_IDLE_SECS 1     // once draining, an idle keep-alive connection has this long
#define CONNECTIONS 1024      // per instance; past it the oldest stalled client is cut
#define PER_ADDRESS 64        // connections one client address may hold, per instance
#define REQUEST_SECS 30       // a request's time on the client's clock (head, body, reading the answer)
#define RETRY_AFTER_SECS 1

typedef struct conn_t conn_t;
struct conn_t {
    struct MHD_Connection *connection;
    drv_conn_t *policy;       // its record in the connection policy
    bool busy;                // between a request's head and its answer
    conn_t *prev, *next;
};

typedef struct request_t request_t;
struct request_t {
    conn_t *conn;
    drv_http_upload_t body;   // the body as it arrives
    bool gzip;
    bool answered;
    char media_type[64];
    drv_http_reply_t held;    // ack: the answer, sent once input is settled
    int64_t input;
    bool holding;             // suspended until settled
    bool settled;             // resumed: answer with held
    struct MHD_Connection *connection; // while held
    request_t *next_held;
};

struct drv_http_server_t {
    struct MHD_Daemon *daemon;
    drv_http_config_t config;
    int listen_fd;            // ours until quiesced
    int epoll_fd;
    drv_conn_policy_t *policy; // deadlines, caps and the body budget (common/drv_conn_policy)
    conn_t *conns;
    size_t conn_count;
    request_t *held;          // suspended requests waiting for their input to settle
    bool resumed;             // answers were resumed: run at once, whatever MHD's own timeout says
    bool draining;
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

static enum MHD_Result s_answer(drv_http_server_t *self, struct MHD_Connection *connection, request_t *req,
                                drv_http_reply_t *reply, const char *allow)
{
    req->answered = true;
    drv_conn_policy_request(self->policy, req->conn ? req->conn->policy : NULL, drv_time_mono_ms()); // reading it
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(reply->size, reply->body ? reply->body : "", MHD_RESPMEM_MUST_COPY);
    free(reply->body);
    reply->body = NULL;
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
    if (self->draining) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    enum MHD_Result rc = MHD_queue_response(connection, (unsigned int)reply->status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result s_refuse(drv_http_server_t *self, struct MHD_Connection *connection, request_t *req,
                                int status, const char *kind, const char *message)
{
    drv_http_reply_t reply = {0};
    if (self->config.error) {
        self->config.error(req->media_type, status, kind, message, &reply);
    } else {
        drv_http_reply_error(&reply, status, kind, "%s", message);
    }
    reply.retry_after_secs = status == 429 || status == 503 ? RETRY_AFTER_SECS : 0;
    return s_answer(self, connection, req, &reply, status == 405 ? "POST" : NULL);
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

int64_t drv_http_content_length(struct MHD_Connection *connection)
{
    const char *value = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!value) {
        return -1;
    }
    char *end = NULL;
    errno = 0;
    long long n = strtoll(value, &end, 10);
    return errno || end == value || *end || n < 0 ? -1 : n;
}

static void s_release(drv_http_server_t *self, request_t *req)
{
    drv_http_upload_release(&req->body, self->policy);
}

//  Only the head has arrived: refuse now what can be refused unread.
static enum MHD_Result s_on_head(drv_http_server_t *self, struct MHD_Connection *connection, request_t *req,
                                 const char *url, const char *method)
{
    //  First, so that every refusal can answer in the request's encoding.
    const char *type = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    size_t n = type ? strcspn(type, "; \t") : 0;
    for (size_t i = 0; i < n && i + 1 < sizeof req->media_type; i++) {
        req->media_type[i] = (char)tolower((unsigned char)type[i]);
    }
    if (strcmp(method, "POST") != 0) {
        return s_refuse(self, connection, req, 405, "method_not_allowed", "only POST is served here");
    }
    char path[256];
    snprintf(path, sizeof path, "%.*s", (int)strcspn(url, "?"), url);
    if (!s_listed(self->config.paths, path)) {
        return s_refuse(self, connection, req, 404, "not_found", "no such path here");
    }
    if (!s_listed(self->config.media_types, req->media_type)) {
        char message[300];
        int at = snprintf(message, sizeof message, "Content-Type must be one of:");
        for (const char *const *t = self->config.media_types; *t && at < (int)sizeof message; t++) {
            at += snprintf(message + at, sizeof message - (size_t)at, " %s", *t);
        }
        return s_refuse(self, connection, req, 415, "unsupported_media_type", message);
    }
    const char *encoding = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING);
    if (encoding && !strcasecmp(encoding, "gzip")) {
        req->gzip = true;
    } else if (encoding && strcasecmp(encoding, "identity") != 0) {
        return s_refuse(self, connection, req, 415, "unsupported_media_type",
                        "Content-Encoding must be gzip or identity");
    }
    if (self->config.backlogged && self->config.backlogged(self->config.arg)) {
        return s_refuse(self, connection, req, 429, "too_many_requests",
                        "the exporters are behind; retry after the time Retry-After says");
    }
    int64_t length = drv_http_content_length(connection);
    if (length > (int64_t)self->config.max_body_bytes) {
        char message[100];
        snprintf(message, sizeof message, "request body larger than %zu bytes", self->config.max_body_bytes);
        return s_refuse(self, connection, req, 413, "payload_too_large", message);
    }
    //  Nothing is reserved from the declared length: the budget is charged as
    //  bytes arrive, so a client that declares 4 MiB and drips holds what it sent.
    req->body.declared = length > 0 ? (size_t)length : 0;
    if (!drv_conn_policy_body_fits(self->policy, req->body.declared)) { // cannot fit now: told at once
        return s_refuse(self, connection, req, 429, "too_many_requests", "too many request bodies in flight; retry");
    }
    return MHD_YES;
}

//  The whole body is here: decode it and let the handler answer.
static enum MHD_Result s_on_body(drv_http_server_t *self, struct MHD_Connection *connection, request_t *req,
                                 const char *url)
{
    if (req->body.too_large) {
        char message[100];
        snprintf(message, sizeof message, "request body larger than %zu bytes", self->config.max_body_bytes);
        return s_refuse(self, connection, req, 413, "payload_too_large", message);
    }
    if (req->body.over_budget) {
        return s_refuse(self, connection, req, 429, "too_many_requests", "too many request bodies in flight; retry");
    }
    char *body = req->body.data;
    size_t size = req->body.len;
    char *inflated = NULL;
    if (req->gzip) {
        drv_gzip_result_t rc = drv_gzip_inflate(body ? body : "", size, self->config.max_body_bytes, &inflated, &size);
        if (rc == DRV_GZIP_TOO_LARGE) {
            char message[100];
            snprintf(message, sizeof message, "request body larger than %zu bytes once gunzipped",
                     self->config.max_body_bytes);
            return s_refuse(self, connection, req, 413, "payload_too_large", message);
        }
        if (rc != DRV_GZIP_OK) {
            return s_refuse(self, connection, req, 400, "invalid_request", "Content-Encoding says gzip; the body is not");
        }
        body = inflated;
    } else if (body) {
        body[size] = 0;
    }
    char path[256];
    snprintf(path, sizeof path, "%.*s", (int)strcspn(url, "?"), url);
    drv_http_request_t request = {.path = path, .media_type = req->media_type, .body = body ? body : "", .size = size};
    drv_http_reply_t reply = {0};
    drv_conn_policy_engine(self->policy, req->conn ? req->conn->policy : NULL); // ours now (an ack may hold it)
    self->config.handler(self->config.arg, &request, &reply);
    free(inflated);
    s_release(self, req);
    if (self->config.ack && reply.status >= 200 && reply.status < 300) {
        //  Answered once what the request became is exported.
        req->held = reply;
        req->input = self->config.input(self->config.arg);
        req->holding = true;
        req->connection = connection;
        req->next_held = self->held;
        self->held = req;
        MHD_suspend_connection(connection);
        return MHD_YES;
    }
    return s_answer(self, connection, req, &reply, NULL);
}

void drv_http_server_settled(drv_http_server_t *self, int64_t upto)
{
    request_t **link = &self->held;
    while (*link) {
        request_t *req = *link;
        if (req->input <= upto) {
            *link = req->next_held;
            req->holding = false;
            req->settled = true;
            MHD_resume_connection(req->connection);
            self->resumed = true;
        } else {
            link = &req->next_held;
        }
    }
}

static enum MHD_Result s_handler(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                                 const char *version, const char *upload_data, size_t *upload_data_size,
                                 void **con_cls)
{
    (void)version;
    drv_http_server_t *self = cls;
    request_t *req = *con_cls;
    if (!req) {
        req = calloc(1, sizeof *req);
        if (!req) {
            return MHD_NO;
        }
        *con_cls = req;
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        req->conn = info ? info->socket_context : NULL;
        if (req->conn) {
            req->conn->busy = true;
        }
        return s_on_head(self, connection, req, url, method);
    }
    if (req->settled) {
        req->settled = false;
        return s_answer(self, connection, req, &req->held, NULL);
    }
    if (req->answered) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        drv_http_upload_add(&req->body, self->policy, self->config.max_body_bytes, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    return s_on_body(self, connection, req, url);
}

static void s_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                        enum MHD_RequestTerminationCode code)
{
    (void)connection;
    (void)code;
    drv_http_server_t *self = cls;
    request_t *req = *con_cls;
    if (!req) {
        return;
    }
    for (request_t **link = &self->held; *link; link = &(*link)->next_held) {
        if (*link == req) {
            *link = req->next_held; // the connection died while held
            break;
        }
    }
    free(req->held.body);
    if (req->conn) {
        req->conn->busy = false;
        drv_conn_policy_idle(self->policy, req->conn->policy, drv_time_mono_ms());
        if (self->draining) {
            MHD_set_connection_option(req->conn->connection, MHD_CONNECTION_OPTION_TIMEOUT, DRAIN_IDLE_SECS);
        }
    }
    s_release(self, req);
    free(req);
    *con_cls = NULL;
}

static void s_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                         enum MHD_ConnectionNotificationCode code)
{
    drv_http_server_t *self = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        conn_t *conn = calloc(1, sizeof *conn);
        if (!conn) {
            return;
        }
        conn->connection = connection;
        const union MHD_ConnectionInfo *fd = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *addr =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        conn->policy = drv_conn_policy_open(self->policy, fd ? fd->connect_fd : -1, addr ? addr->client_addr : NULL,
                                            drv_time_mono_ms());
        conn->next = self->conns;
        if (self->conns) {
            self->conns->prev = conn;
        }
        self->conns = conn;
        self->conn_count++;
        *socket_context = conn;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        conn_t *conn = *socket_context;
        if (conn->prev) {
            conn->prev->next = conn->next;
        } else {
            self->conns = conn->next;
        }
        if (conn->next) {
            conn->next->prev = conn->prev;
        }
        self->conn_count--;
        drv_conn_policy_close(self->policy, conn->policy);
        free(conn);
        *socket_context = NULL;
    }
}

static void s_log(void *cls, const char *fmt, va_list args)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, args);
    line[strcspn(line, "\n")] = 0;
    drv_warn("http receiver: %s", line);
}

drv_http_server_t *drv_http_server_new(int listen_fd, const drv_http_config_t *config, char *err, size_t errlen)
{
    drv_http_server_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    self->config = *config;
    self->listen_fd = listen_fd;
    drv_conn_limits_t limits = {.per_address = PER_ADDRESS,
                                .total = CONNECTIONS,
                                .request_ms = REQUEST_SECS * 1000,
                                .idle_ms = IDLE_SECS * 1000,
                                .body_budget = config->buffer_bytes};
    self->policy = drv_conn_policy_new(&limits, "http receiver");
    self->daemon = MHD_start_daemon(
        MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, s_handler, self, MHD_OPTION_LISTEN_SOCKET, listen_fd,
        MHD_OPTION_EXTERNAL_LOGGER, s_log, NULL, MHD_OPTION_NOTIFY_COMPLETED, s_completed, self,
        MHD_OPTION_NOTIFY_CONNECTION, s_connection, self, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)IDLE_SECS,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)(CONNECTIONS + PER_ADDRESS), // room to evict
        MHD_OPTION_END);
    const union MHD_DaemonInfo *info = self->daemon ? MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
    if (!info) {
        snprintf(err, errlen, "cannot start the HTTP server on the inherited socket");
        drv_http_server_destroy(&self);
        return NULL;
    }
    self->epoll_fd = info->epoll_fd;
    return self;
}

void drv_http_server_destroy(drv_http_server_t **self_p)
{
    drv_http_server_t *self = *self_p;
    if (!self) {
        return;
    }
    *self_p = NULL;
    if (self->daemon) {
        drv_http_server_drain(self); // gives back our copy of the listening socket, which we close
        MHD_stop_daemon(self->daemon);
    } else if (self->listen_fd >= 0) {
        close(self->listen_fd);
    }
    drv_conn_policy_destroy(&self->policy);
    free(self);
}

int drv_http_server_fd(drv_http_server_t *self)
{
    return self->draining && self->conn_count == 0 ? -1 : self->epoll_fd;
}

int64_t drv_http_server_timeout_ms(drv_http_server_t *self)
{
    if (self->resumed) {
        return 0; // an acknowledgement is ready: the loop must not sleep until its next heartbeat
    }
    MHD_UNSIGNED_LONG_LONG ms = 0;
    int64_t mhd = MHD_get_timeout(self->daemon, &ms) == MHD_YES ? (int64_t)ms : -1;
    int64_t policy = drv_conn_policy_expire(self->policy, drv_time_mono_ms());
    return mhd < 0 ? policy : policy < 0 || mhd < policy ? mhd : policy;
}

void drv_http_server_run(drv_http_server_t *self)
{
    drv_conn_policy_expire(self->policy, drv_time_mono_ms()); // cuts the stalled: MHD then reads their end
    self->resumed = false;
    MHD_run(self->daemon);
}

void drv_http_server_drain(drv_http_server_t *self)
{
    if (self->draining) {
        return;
    }
    self->draining = true;
    MHD_socket fd = MHD_quiesce_daemon(self->daemon);
    if (fd != MHD_INVALID_SOCKET) {
        close(fd); // this instance's copy; droverd keeps the socket and the others accept
    }
    self->listen_fd = -1;
    for (conn_t *conn = self->conns; conn; conn = conn->next) {
        if (!conn->busy) {
            MHD_set_connection_option(conn->connection, MHD_CONNECTION_OPTION_TIMEOUT, DRAIN_IDLE_SECS);
        }
    }
}
