/*  drv_admin_http — the admin API over HTTP with libmicrohttpd.

    MHD runs its own polling thread (epoll). That thread only speaks HTTP: it
    reads a request, suspends the connection and hands the parsed request to
    droverd's loop over an inproc PAIR socket. The loop routes it (the registry
    is only ever touched from the loop thread) and the reply resumes the
    connection, which MHD's thread then answers. A request whose answer is not
    ready (a waiting rollout) simply stays suspended: nothing blocks. */
#include "drv_admin.h"

#include "drover/drv_log.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <string.h>

struct drv_admin_http_t {
    struct MHD_Daemon *daemon;
    zsock_t *loop_end; // PAIR read by droverd's loop
    zsock_t *mhd_end;  // PAIR written only by MHD's thread
};

typedef struct {
    drv_engine_t *engine;
    struct MHD_Connection *connection;
    char *body;              // upload so far
    size_t body_len;
    bool too_large;          // upload passed DRV_ADMIN_MAX_BODY; the rest is discarded
    bool dispatched;
    bool suspended;
    bool has_response;
    drv_admin_response_t response; // the router's answer, waiting to be queued
    drv_admin_request_t *pending;  // dispatched, not yet answered
} http_ctx_t;

//  The router's answer: keep it for the connection, and wake it if suspended.
static void s_reply(drv_admin_request_t *request, drv_admin_response_t *response)
{
    http_ctx_t *ctx = request->transport_ctx;
    if (ctx) {
        ctx->response = *response;
        memset(response, 0, sizeof *response); // moved
        ctx->has_response = true;
        ctx->pending = NULL;
        if (ctx->suspended) {
            ctx->suspended = false;
            MHD_resume_connection(ctx->connection);
        }
    }
    drv_admin_request_free(request);
}

static enum MHD_Result s_queue(struct MHD_Connection *connection, drv_admin_response_t *r)
{
    char *text = NULL;
    size_t len;
    if (r->json) {
        text = json_dumps(r->json, JSON_COMPACT | JSON_ENCODE_ANY);
        len = strlen(text);
        text = realloc(text, len + 2);
        text[len++] = '\n';
        text[len] = 0;
    } else {
        text = strdup(r->text ? r->text : "");
        len = strlen(text);
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            r->content_type ? r->content_type : "application/json");
    if (r->location) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, r->location);
    }
    if (r->allow) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
    }
    if (r->status == 401) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    }
    enum MHD_Result rc = MHD_queue_response(connection, (unsigned int)r->status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result s_collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    json_object_set_new(cls, key, json_string(value ? value : ""));
    return MHD_YES;
}

//  Constant-time comparison of the presented token with ours.
static bool s_token_ok(const char *header, const char *token)
{
    if (!token) {
        return true;
    }
    if (!header || strncmp(header, "Bearer ", 7) != 0) {
        return false;
    }
    const char *given = header + 7;
    size_t a = strlen(given), b = strlen(token);
    unsigned char diff = (unsigned char)(a != b);
    for (size_t i = 0; i < b; i++) {
        diff |= (unsigned char)(token[i] ^ (i < a ? given[i] : 0));
    }
    return diff == 0;
}

static enum MHD_Result s_handler(void *cls, struct MHD_Connection *connection, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    (void)version;
    drv_engine_t *engine = cls;
    http_ctx_t *ctx = *con_cls;
    if (!ctx) {
        ctx = calloc(1, sizeof *ctx);
        ctx->engine = engine;
        ctx->connection = connection;
        *con_cls = ctx;
        return MHD_YES; // headers only so far
    }
    if (ctx->has_response) {
        return s_queue(connection, &ctx->response);
    }
    if (*upload_data_size > 0) {
        if (!ctx->too_large && ctx->body_len + *upload_data_size <= DRV_ADMIN_MAX_BODY) {
            ctx->body = realloc(ctx->body, ctx->body_len + *upload_data_size + 1);
            memcpy(ctx->body + ctx->body_len, upload_data, *upload_data_size);
            ctx->body_len += *upload_data_size;
            ctx->body[ctx->body_len] = 0;
        } else {
            ctx->too_large = true;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (ctx->dispatched) {
        return MHD_YES; // resumed spuriously; the answer is not there yet
    }
    ctx->dispatched = true;
    drv_admin_response_t response = {0};
    if (ctx->too_large) {
        drv_admin_error(&response, 413, "payload_too_large", "request body larger than %d bytes",
                        DRV_ADMIN_MAX_BODY);
        enum MHD_Result rc = s_queue(connection, &response);
        drv_admin_response_clear(&response);
        return rc;
    }
    json_t *body = NULL;
    if (ctx->body_len > 0) {
        json_error_t jerr;
        body = json_loadb(ctx->body, ctx->body_len, JSON_DECODE_ANY, &jerr);
        if (!body) {
            drv_admin_error(&response, 400, "invalid_request", "body is not valid JSON: %s at line %d column %d",
                            jerr.text, jerr.line, jerr.column);
            enum MHD_Result rc = s_queue(connection, &response);
            drv_admin_response_clear(&response);
            return rc;
        }
    }
    drv_admin_request_t *request = calloc(1, sizeof *request);
    snprintf(request->method, sizeof request->method, "%s", method);
    request->path = strdup(url);
    request->query = json_object();
    MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, s_collect_arg, request->query);
    request->body = body;
    request->transport = "http";
    request->authorized = s_token_ok(
        MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
        engine->http_token);
    request->reply = s_reply;
    request->transport_ctx = ctx;
    ctx->pending = request;
    //  Suspend first, so a reply can never try to resume a running connection.
    ctx->suspended = true;
    MHD_suspend_connection(connection);
    zsock_send(engine->http->mhd_end, "p", request);
    return MHD_YES;
}

static void s_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                        enum MHD_RequestTerminationCode code)
{
    (void)cls;
    (void)connection;
    (void)code;
    http_ctx_t *ctx = *con_cls;
    if (!ctx) {
        return;
    }
    if (ctx->pending) {
        ctx->pending->transport_ctx = NULL; // the client left; the answer goes nowhere
    }
    free(ctx->body);
    drv_admin_response_clear(&ctx->response);
    free(ctx);
    *con_cls = NULL;
}

static void s_log(void *cls, const char *fmt, va_list args)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, args);
    drv_warn("http: %s", line);
}

int drv_admin_http_start(drv_engine_t *engine, char *err, size_t errlen)
{
    const char *listen = engine->config->admin_http;
    if (!listen || !listen[0]) {
        return 0; // disabled
    }
    char host[256];
    snprintf(host, sizeof host, "%s", listen);
    char *colon = strrchr(host, ':');
    if (!colon) {
        snprintf(err, errlen, "engine.admin.http: %s is not host:port", listen);
        return -1;
    }
    *colon = 0;
    int port = atoi(colon + 1);
    struct sockaddr_in addr4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in6 addr6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    struct sockaddr *addr;
    unsigned int flags = MHD_USE_EPOLL_INTERNALLY | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    char *h = host;
    if (h[0] == '[') {
        h++;
        h[strlen(h) - 1] = 0;
    }
    if (strcmp(h, "localhost") == 0) {
        h = "127.0.0.1";
    }
    if (inet_pton(AF_INET, h, &addr4.sin_addr) == 1) {
        addr = (struct sockaddr *)&addr4;
    } else if (inet_pton(AF_INET6, h, &addr6.sin6_addr) == 1) {
        addr = (struct sockaddr *)&addr6;
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(err, errlen, "engine.admin.http: %s is not an IP address", h);
        return -1;
    }
    engine->http = calloc(1, sizeof *engine->http);
    char pipe[64];
    snprintf(pipe, sizeof pipe, "@inproc://drover-http-%p", (void *)engine);
    engine->http->loop_end = zsock_new_pair(pipe);
    pipe[0] = '>';
    engine->http->mhd_end = zsock_new_pair(pipe);
    engine->http->daemon = MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, s_handler, engine, MHD_OPTION_EXTERNAL_LOGGER, s_log, NULL,
        MHD_OPTION_SOCK_ADDR, addr, MHD_OPTION_NOTIFY_COMPLETED, s_completed, NULL,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)DRV_ADMIN_HTTP_IDLE_SECS, MHD_OPTION_CONNECTION_LIMIT,
        512u, MHD_OPTION_END);
    if (!engine->http->daemon) {
        snprintf(err, errlen, "cannot listen for HTTP on %s: %s", listen, strerror(errno));
        zsock_destroy(&engine->http->mhd_end);
        zsock_destroy(&engine->http->loop_end);
        free(engine->http);
        engine->http = NULL;
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
    if (!engine->http) {
        return;
    }
    //  Requests still in the pipe get an answer, so no connection is left
    //  suspended when the daemon stops.
    while (zsock_events(engine->http->loop_end) & ZMQ_POLLIN) {
        drv_admin_request_t *request = NULL;
        if (zsock_recv(engine->http->loop_end, "p", &request) == 0 && request) {
            drv_admin_response_t response = {0};
            drv_admin_error(&response, 503, "internal", "droverd is shutting down");
            response.content_type = "application/json";
            request->reply(request, &response);
            drv_admin_response_clear(&response);
        }
    }
    MHD_stop_daemon(engine->http->daemon);
    zsock_destroy(&engine->http->mhd_end);
    zsock_destroy(&engine->http->loop_end);
    free(engine->http);
    engine->http = NULL;
}
