/*  drv_admin_http — the admin API over HTTP with libmicrohttpd.

    MHD runs its own polling thread (epoll). That thread only speaks HTTP: it
    judges each request by its head (drv_http_rules: Host, Origin, token,
    Content-Type, length) before reading any body, keeps the connection
    budget (drv_http_guard), reads the body, then suspends the connection and
    hands the parsed request to droverd's loop over an inproc PAIR socket.
    The loop routes it (the registry is only ever touched from the loop
    thread) and the reply resumes the connection, which MHD's thread then
    answers. A request whose answer is not ready (a waiting rollout) simply
    stays suspended: nothing blocks.

    What must stay true: MHD refuses to stop while a connection is suspended,
    so every suspended connection is on the pending list, and stopping
    answers whatever is still on it. */
#include "drv_admin_http.h"
#include "drv_admin_http_answer.h"
#include "drv_admin_http_stream.h"
#include "drv_admin.h"
#include "drv_http_guard.h"
#include "drv_http_rules.h"
#include "drv_http_server.h"
#include "drv_admin_request.h"

#include "drover/drv_config.h"
#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>

#define BODY_BUDGET (16 * 1024 * 1024)  // request bodies buffered at once, all clients
#define CONNECTIONS_PER_CLIENT 64       // then a client's oldest unfinished request is cut
#define CONNECTIONS_TOTAL 1000          // then anyone's oldest unfinished request is cut
#define TRIM_AFTER_BYTES (256 * 1024)   // give a large body's memory back to the system
#define STOP_FLUSH_MS 1000              // stopping waits this long at most for answers to go out

typedef struct http_ctx_t http_ctx_t;
typedef struct drv_admin_http_t drv_admin_http_t;

struct drv_admin_http_t {
    struct MHD_Daemon *daemon;
    zsock_t *loop_end;           // PAIR read by droverd's loop
    zsock_t *mhd_end;            // PAIR written only by MHD's thread
    drv_http_rules_t *rules;
    drv_http_guard_t *guard;
    pthread_mutex_t lock;        // guards pending: added by MHD's thread, answered by the loop
    http_ctx_t *pending;         // suspended connections, waiting for the loop's answer
    int answering;               // answers handed back and not yet sent (guarded by lock)
};

struct http_ctx_t {
    drv_engine_t *engine;
    struct MHD_Connection *connection;
    drv_http_conn_t *conn;       // the guard's record of this connection
    http_ctx_t *next_pending;
    char *body;                  // upload so far
    size_t body_len;
    size_t body_cap;
    size_t body_taken;           // bytes of the guard's body budget held
    bool authorized;             // the bearer token was presented
    bool over_budget;            // the body budget could not hold this body: 503
    bool too_large;              // upload passed DRV_ADMIN_MAX_BODY; the rest is discarded
    bool dispatched;
    bool suspended;
    bool has_response;
    drv_admin_response_t response; // the router's answer, waiting to be queued
    drv_admin_request_t *pending;  // dispatched, not yet answered
};

static void s_unlink_pending(drv_admin_http_t *http, http_ctx_t *ctx)
{
    for (http_ctx_t **p = &http->pending; *p; p = &(*p)->next_pending) {
        if (*p == ctx) {
            *p = ctx->next_pending;
            break;
        }
    }
    ctx->next_pending = NULL;
}

//  Called on the loop thread: keep the answer for the connection and wake it.
static void s_reply(drv_admin_request_t *request, drv_admin_response_t *response)
{
    http_ctx_t *ctx = request->transport_ctx;
    if (ctx) {
        drv_admin_http_t *http = ctx->engine->http;
        pthread_mutex_lock(&http->lock);
        s_unlink_pending(http, ctx);
        ctx->response = *response;
        memset(response, 0, sizeof *response); // moved
        ctx->has_response = true;
        http->answering++;
        ctx->pending = NULL;
        if (!ctx->response.stream) {
            drv_http_guard_client_turn(http->guard, ctx->conn);
        } else {
            //  A stream is not the client's time: MHD's idle timeout closes
            //  one that stops reading, and its queue is bounded. A probe
            //  that needs its place takes it.
            drv_http_guard_streaming(http->guard, ctx->conn);
        }
        if (ctx->suspended) {
            ctx->suspended = false;
            MHD_resume_connection(ctx->connection);
        }
        pthread_mutex_unlock(&http->lock);
    }
    drv_admin_request_free(request);
}

static enum MHD_Result s_collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    json_object_set_new(cls, key, json_stringn_nocheck(value ? value : "", value ? strlen(value) : 0));
    return MHD_YES;
}

//  Percent-decoding of the path and query, in place. A %00 becomes the byte
//  0xFF, which is never valid UTF-8, so the router refuses the request with
//  400 naming the field instead of silently cutting a name at the NUL.
static size_t s_unescape(void *cls, struct MHD_Connection *connection, char *text)
{
    (void)cls;
    (void)connection;
    return drv_admin_percent_decode(text);
}

static void s_body_free(drv_admin_http_t *http, http_ctx_t *ctx)
{
    bool large = ctx->body_cap >= TRIM_AFTER_BYTES;
    free(ctx->body);
    ctx->body = NULL;
    ctx->body_len = ctx->body_cap = 0;
    drv_http_guard_give_body(http->guard, ctx->body_taken);
    ctx->body_taken = 0;
    if (large) {
        malloc_trim(0);
    }
}

//  The first call: only the head has arrived. Returns MHD_YES to go on, or
//  the result of queueing a refusal.
static enum MHD_Result s_on_head(drv_engine_t *engine, http_ctx_t *ctx, struct MHD_Connection *connection,
                                 const char *url, const char *method, bool *refused)
{
    drv_http_request_head_t head = {
        .method = method,
        .path = url,
        .host = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST),
        .origin = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Origin"),
        .content_type = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
        .authorization = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
        .content_length = drv_http_content_length(connection),
        .max_body = DRV_ADMIN_MAX_BODY,
    };
    drv_http_verdict_t verdict;
    drv_http_rules_check(engine->http->rules, &head, &verdict, &ctx->authorized);
    if (verdict.status) {
        *refused = true;
        return drv_admin_http_refuse(connection, verdict.status, verdict.kind, verdict.message, 0);
    }
    //  Nothing is reserved from Content-Length: the budget is charged as
    //  bytes arrive. A body that cannot fit in what is left now is refused at once.
    if (head.content_length > 0 && !drv_http_guard_body_fits(engine->http->guard, (size_t)head.content_length)) {
        *refused = true;
        return drv_admin_http_refuse(connection, 503, "unavailable", "too many request bodies in flight; retry", 1);
    }
    return MHD_YES;
}

static void s_on_upload(drv_admin_http_t *http, http_ctx_t *ctx, const char *data, size_t size)
{
    if (ctx->too_large || ctx->over_budget) {
        return; // discarded
    }
    if (ctx->body_len + size > DRV_ADMIN_MAX_BODY) {
        ctx->too_large = true;
        s_body_free(http, ctx);
        return;
    }
    if (ctx->body_len + size > ctx->body_cap) {
        //  No Content-Length (chunked), or more than it said: take as it comes.
        size_t more = ctx->body_len + size - ctx->body_cap;
        if (!drv_http_guard_take_body(http->guard, more)) {
            ctx->over_budget = true;
            s_body_free(http, ctx);
            return;
        }
        ctx->body_taken += more;
        char *grown = realloc(ctx->body, ctx->body_len + size + 1);
        if (!grown) {
            ctx->over_budget = true;
            s_body_free(http, ctx);
            return;
        }
        ctx->body = grown;
        ctx->body_cap = ctx->body_len + size;
    }
    memcpy(ctx->body + ctx->body_len, data, size);
    ctx->body_len += size;
    ctx->body[ctx->body_len] = 0;
}

static enum MHD_Result s_handler(void *cls, struct MHD_Connection *connection, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    (void)version;
    drv_engine_t *engine = cls;
    drv_admin_http_t *http = engine->http;
    http_ctx_t *ctx = *con_cls;
    if (!ctx) {
        ctx = calloc(1, sizeof *ctx);
        ctx->engine = engine;
        ctx->connection = connection;
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        ctx->conn = info ? info->socket_context : NULL;
        *con_cls = ctx;
        bool refused = false;
        enum MHD_Result rc = s_on_head(engine, ctx, connection, url, method, &refused);
        if (refused) {
            ctx->dispatched = true; // answered; the body, if any, is never read
        }
        return rc;
    }
    if (ctx->has_response) {
        return drv_admin_http_answer(connection, &ctx->response);
    }
    if (*upload_data_size > 0) {
        s_on_upload(http, ctx, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (ctx->dispatched) {
        return MHD_YES; // resumed spuriously; the answer is not there yet
    }
    ctx->dispatched = true;
    if (ctx->too_large) {
        char message[100];
        snprintf(message, sizeof message, "request body larger than %d bytes", DRV_ADMIN_MAX_BODY);
        return drv_admin_http_refuse(connection, 413, "payload_too_large", message, 0);
    }
    if (ctx->over_budget) {
        return drv_admin_http_refuse(connection, 503, "unavailable", "too many request bodies in flight; retry", 1);
    }
    json_t *body = NULL;
    if (ctx->body_len > 0) {
        json_error_t jerr;
        body = json_loadb(ctx->body, ctx->body_len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
        if (!body) {
            char message[300];
            snprintf(message, sizeof message, "body is not valid JSON: %s at line %d column %d", jerr.text,
                     jerr.line, jerr.column);
            return drv_admin_http_refuse(connection, 400, "invalid_request", message, 0);
        }
    }
    s_body_free(http, ctx);
    drv_admin_request_t *request = calloc(1, sizeof *request);
    snprintf(request->method, sizeof request->method, "%s", method);
    request->path = strdup(url);
    request->query = json_object();
    MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, s_collect_arg, request->query);
    request->body = body;
    request->transport = "http";
    const char *accept = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    snprintf(request->accept, sizeof request->accept, "%s", accept ? accept : "");
    request->authorized = ctx->authorized;
    request->reply = s_reply;
    request->transport_ctx = ctx;
    //  Suspend first, so a reply can never try to resume a running connection.
    pthread_mutex_lock(&http->lock);
    ctx->pending = request;
    ctx->suspended = true;
    ctx->next_pending = http->pending;
    http->pending = ctx;
    drv_http_guard_dispatched(http->guard, ctx->conn);
    MHD_suspend_connection(connection);
    pthread_mutex_unlock(&http->lock);
    zsock_send(http->mhd_end, "p", request);
    return MHD_YES;
}

static void s_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                        enum MHD_RequestTerminationCode code)
{
    (void)connection;
    (void)code;
    drv_engine_t *engine = cls;
    http_ctx_t *ctx = *con_cls;
    if (!ctx) {
        return;
    }
    drv_admin_http_t *http = engine->http;
    pthread_mutex_lock(&http->lock);
    if (ctx->pending) {
        ctx->pending->transport_ctx = NULL; // the client left; the answer goes nowhere
        s_unlink_pending(http, ctx);
    }
    if (ctx->has_response) {
        http->answering--;
    }
    pthread_mutex_unlock(&http->lock);
    drv_http_guard_client_turn(http->guard, ctx->conn); // a keep-alive connection's next request
    s_body_free(http, ctx);
    drv_admin_response_clear(&ctx->response);
    free(ctx);
    *con_cls = NULL;
}

static void s_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                         enum MHD_ConnectionNotificationCode code)
{
    drv_engine_t *engine = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fd = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *addr =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        *socket_context = drv_http_guard_open(engine->http->guard, fd ? fd->connect_fd : -1,
                                              addr ? addr->client_addr : NULL);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        drv_http_guard_close(engine->http->guard, *socket_context);
        *socket_context = NULL;
    }
}

static void s_log(void *cls, const char *fmt, va_list args)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, args);
    if (strstr(line, "closed by remote peer") || strstr(line, "Connection reset")) {
        drv_debug("http: %s", line); // a client left (an event stream closed): nothing wrong here
        return;
    }
    drv_warn("http: %s", line);
}

//  Every connection may need a descriptor: make sure the budget fits.
static void s_raise_nofile(void)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max && lim.rlim_cur < 8192) {
        lim.rlim_cur = lim.rlim_max < 8192 ? lim.rlim_max : 8192;
        setrlimit(RLIMIT_NOFILE, &lim);
    }
}

int drv_admin_http_start(drv_engine_t *engine, char *err, size_t errlen)
{
    const char *listen = engine->config->admin_http;
    if (!listen || !listen[0]) {
        return 0; // disabled
    }
    char host[256];
    int port;
    if (drv_config_hostport(listen, host, sizeof host, &port) != 0) {
        snprintf(err, errlen, "engine.admin.http: \"%s\" is not host:port", listen);
        return -1;
    }
    struct sockaddr_in addr4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in6 addr6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    struct sockaddr *addr;
    unsigned int flags = MHD_USE_EPOLL_INTERNALLY | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    const char *h = strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
    if (inet_pton(AF_INET, h, &addr4.sin_addr) == 1) {
        addr = (struct sockaddr *)&addr4;
    } else if (inet_pton(AF_INET6, h, &addr6.sin6_addr) == 1) {
        addr = (struct sockaddr *)&addr6;
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(err, errlen, "engine.admin.http: %s is not an IP address", h);
        return -1;
    }
    s_raise_nofile();
    drv_admin_http_t *http = calloc(1, sizeof *http);
    engine->http = http;
    pthread_mutex_init(&http->lock, NULL);
    const drv_config_t *config = engine->config;
    http->rules = drv_http_rules_new(listen, (const char *const *)config->http_hosts, config->http_host_count,
                                     engine->http_token);
    http->guard = drv_http_guard_new(CONNECTIONS_PER_CLIENT, CONNECTIONS_TOTAL, BODY_BUDGET);
    char pipe[64];
    snprintf(pipe, sizeof pipe, "@inproc://drover-http-%p", (void *)engine);
    http->loop_end = zsock_new_pair(pipe);
    pipe[0] = '>';
    http->mhd_end = zsock_new_pair(pipe);
    if (http->guard) {
        http->daemon = MHD_start_daemon(
            flags, (uint16_t)port, NULL, NULL, s_handler, engine, MHD_OPTION_EXTERNAL_LOGGER, s_log, NULL,
            MHD_OPTION_SOCK_ADDR, addr, MHD_OPTION_NOTIFY_COMPLETED, s_completed, engine,
            MHD_OPTION_NOTIFY_CONNECTION, s_connection, engine, MHD_OPTION_UNESCAPE_CALLBACK, s_unescape, NULL,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)DRV_ADMIN_HTTP_IDLE_SECS, MHD_OPTION_CONNECTION_LIMIT,
            (unsigned int)(CONNECTIONS_TOTAL + CONNECTIONS_PER_CLIENT), MHD_OPTION_END);
    }
    if (!http->daemon) {
        snprintf(err, errlen, "cannot listen for HTTP on %s: %s", listen, strerror(errno));
        drv_admin_http_stop(engine);
        return -1;
    }
    drv_info("admin listening http=%s token=%s", listen, engine->http_token ? "required" : "off");
    return 0;
}

zsock_t *drv_admin_http_socket(drv_engine_t *engine)
{
    return engine->http ? engine->http->loop_end : NULL;
}

void drv_admin_http_on_readable(drv_engine_t *engine)
{
    for (int i = 0; i < 256 && (zsock_events(engine->http->loop_end) & ZMQ_POLLIN); i++) {
        drv_admin_request_t *request = NULL;
        if (zsock_recv(engine->http->loop_end, "p", &request) == 0 && request) {
            drv_admin_dispatch(engine, request);
        }
    }
}

void drv_admin_http_stop(drv_engine_t *engine)
{
    drv_admin_http_t *http = engine->http;
    if (!http) {
        return;
    }
    //  Requests still in the pipe get an answer, so no connection is left
    //  suspended when the daemon stops.
    while (http->loop_end && (zsock_events(http->loop_end) & ZMQ_POLLIN)) {
        drv_admin_request_t *request = NULL;
        if (zsock_recv(http->loop_end, "p", &request) == 0 && request) {
            drv_admin_response_t response = {0};
            drv_admin_error(&response, 503, "internal", "droverd is shutting down");
            response.content_type = "application/json";
            request->reply(request, &response);
            drv_admin_response_clear(&response);
        }
    }
    //  And so do requests some operation still holds (every waiter should
    //  have been answered by now; this keeps MHD from aborting if not).
    pthread_mutex_lock(&http->lock);
    while (http->pending) {
        http_ctx_t *ctx = http->pending;
        http->pending = ctx->next_pending;
        ctx->next_pending = NULL;
        ctx->pending->transport_ctx = NULL; // its owner's later reply goes nowhere
        ctx->pending = NULL;
        drv_admin_error(&ctx->response, 503, "internal", "droverd is shutting down");
        ctx->has_response = true;
        http->answering++;
        if (ctx->suspended) {
            ctx->suspended = false;
            MHD_resume_connection(ctx->connection);
        }
    }
    pthread_mutex_unlock(&http->lock);
    //  Answers just handed back are sent by MHD's thread: give them a moment
    //  (stopping the daemon would close their connections unanswered).
    int64_t deadline = drv_time_mono_ms() + STOP_FLUSH_MS;
    for (;;) {
        pthread_mutex_lock(&http->lock);
        int answering = http->answering + drv_admin_http_streams_open();
        pthread_mutex_unlock(&http->lock);
        if (answering == 0 || drv_time_mono_ms() >= deadline || !http->daemon) {
            break;
        }
        struct timespec pause = {0, 2 * 1000 * 1000};
        nanosleep(&pause, NULL); // another thread's progress, which has no event to wait on
    }
    if (http->daemon) {
        MHD_stop_daemon(http->daemon);
    }
    drv_http_guard_destroy(&http->guard);
    drv_http_rules_destroy(&http->rules);
    zsock_destroy(&http->mhd_end);
    zsock_destroy(&http->loop_end);
    pthread_mutex_destroy(&http->lock);
    free(http);
    engine->http = NULL;
}
