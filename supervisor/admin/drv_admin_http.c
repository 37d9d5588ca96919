/*  drv_admin_http — the admin API over HTTP, on droverd's one loop.

    The server is the loop-driven one the HTTP receivers use
    (common/drv_httpd): no thread, one epoll descriptor polled with the
    loop's other sockets. A request is judged by its head (drv_http_rules:
    Host, Origin, token, Content-Type, length) before any body is read,
    the body is charged to the connection policy's budget as it arrives,
    and the parsed request goes to the router on the same thread. A
    request whose answer is not ready (a rollout with wait=true) is
    suspended off the client's clock until the operation replies: nothing
    blocks, and no lock is needed — the registry, the server and the
    answers all live on the loop's thread. */
#include "drv_admin_http.h"
#include "drv_admin_http_answer.h"
#include "drv_admin.h"
#include "drv_http_rules.h"
#include "drv_admin_request.h"

#include "drover/drv_config.h"
#include "drover/drv_httpd.h"
#include "drover/drv_log.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>

#define BODY_BUDGET (16 * 1024 * 1024) // request bodies buffered at once, all clients
#define CONNECTIONS_PER_CLIENT 64      // then a client's oldest unfinished request is cut
#define CONNECTIONS_TOTAL 1000         // then anyone's oldest unfinished request is cut
#define REQUEST_SECS 10                // a request's time on the client's clock
#define STOP_FLUSH_MS 1000             // stopping waits this long at most for answers to go out

typedef struct http_ctx_t http_ctx_t;
typedef struct drv_admin_http_t drv_admin_http_t;

struct drv_admin_http_t {
    drv_httpd_t *httpd;
    drv_http_rules_t *rules;
    http_ctx_t *pending; // dispatched, waiting for the router's answer
};

struct http_ctx_t {
    drv_engine_t *engine;
    drv_httpd_req_t *req;
    bool authorized;              // the bearer token was presented
    drv_admin_request_t *request; // dispatched, not yet answered
    http_ctx_t *prev, *next;      // on the pending list while request is set
};

static void s_unlink(drv_admin_http_t *http, http_ctx_t *ctx)
{
    if (ctx->prev) {
        ctx->prev->next = ctx->next;
    } else if (http->pending == ctx) {
        http->pending = ctx->next;
    }
    if (ctx->next) {
        ctx->next->prev = ctx->prev;
    }
    ctx->prev = ctx->next = NULL;
    ctx->request = NULL;
}

//  The router's answer, now or later.
static void s_reply(drv_admin_request_t *request, drv_admin_response_t *response)
{
    http_ctx_t *ctx = request->transport_ctx;
    if (ctx) {
        s_unlink(ctx->engine->http, ctx);
        drv_admin_http_answer(ctx->req, response);
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
static size_t s_unescape(char *text)
{
    return drv_admin_percent_decode(text);
}

//  Only the head has arrived: refuse what the rules refuse, unread.
static void s_on_head(void *arg, drv_httpd_req_t *req)
{
    drv_engine_t *engine = arg;
    http_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        drv_httpd_answer(req, 503, NULL); // no memory: the connection is closed
        return;
    }
    ctx->engine = engine;
    ctx->req = req;
    drv_httpd_set_user(req, ctx);
    drv_http_request_head_t head = {
        .method = drv_httpd_method(req),
        .path = drv_httpd_url(req),
        .host = drv_httpd_header(req, MHD_HTTP_HEADER_HOST),
        .origin = drv_httpd_header(req, "Origin"),
        .content_type = drv_httpd_header(req, MHD_HTTP_HEADER_CONTENT_TYPE),
        .authorization = drv_httpd_header(req, MHD_HTTP_HEADER_AUTHORIZATION),
        .content_length = drv_httpd_content_length(req),
        .max_body = DRV_ADMIN_MAX_BODY,
    };
    drv_http_verdict_t verdict;
    drv_http_rules_check(engine->http->rules, &head, &verdict, &ctx->authorized);
    if (verdict.status) {
        drv_admin_http_refuse(req, verdict.status, verdict.kind, verdict.message, 0);
        return;
    }
    //  Nothing is reserved from Content-Length: the budget is charged as
    //  bytes arrive. A body that cannot fit in what is left now is refused:
    //  at once when the client waits for our go-ahead (Expect: 100-continue);
    //  otherwise it is discarded as it arrives and refused when it ends, so
    //  a client still sending is never reset before it reads the answer.
    if (head.content_length > 0 &&
        !drv_conn_policy_body_fits(drv_httpd_policy(engine->http->httpd), (size_t)head.content_length)) {
        const char *expect = drv_httpd_header(req, MHD_HTTP_HEADER_EXPECT);
        if (expect && strcasecmp(expect, "100-continue") == 0) {
            drv_admin_http_refuse(req, 503, "unavailable", "too many request bodies in flight; retry", 1);
        } else {
            drv_httpd_body(req)->over_budget = true;
        }
    }
}

//  The whole body is here: parse it and hand the request to the router.
static void s_on_body(void *arg, drv_httpd_req_t *req)
{
    drv_engine_t *engine = arg;
    http_ctx_t *ctx = drv_httpd_user(req);
    drv_http_upload_t *upload = drv_httpd_body(req);
    if (upload->too_large) {
        char message[100];
        snprintf(message, sizeof message, "request body larger than %d bytes", DRV_ADMIN_MAX_BODY);
        drv_admin_http_refuse(req, 413, "payload_too_large", message, 0);
        return;
    }
    if (upload->over_budget) {
        drv_admin_http_refuse(req, 503, "unavailable", "too many request bodies in flight; retry", 1);
        return;
    }
    json_t *body = NULL;
    if (upload->len > 0) {
        json_error_t jerr;
        body = json_loadb(upload->data, upload->len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
        if (!body) {
            char message[300];
            snprintf(message, sizeof message, "body is not valid JSON: %s at line %d column %d", jerr.text, jerr.line,
                     jerr.column);
            drv_admin_http_refuse(req, 400, "invalid_request", message, 0);
            return;
        }
    }
    drv_admin_request_t *request = calloc(1, sizeof *request);
    if (!request || !(request->path = strdup(drv_httpd_url(req))) || !(request->query = json_object())) {
        json_decref(body);
        if (request) {
            drv_admin_request_free(request);
        }
        drv_admin_http_refuse(req, 503, "unavailable", "out of memory; retry", 1);
        return;
    }
    snprintf(request->method, sizeof request->method, "%s", drv_httpd_method(req));
    MHD_get_connection_values(drv_httpd_connection(req), MHD_GET_ARGUMENT_KIND, s_collect_arg, request->query);
    request->body = body;
    request->transport = "http";
    const char *accept = drv_httpd_header(req, MHD_HTTP_HEADER_ACCEPT);
    snprintf(request->accept, sizeof request->accept, "%s", accept ? accept : "");
    const char *last = drv_httpd_header(req, "Last-Event-ID");
    char *end = NULL;
    long long id = last ? strtoll(last, &end, 10) : -1;
    request->last_event_id = last && end && end != last && !*end && id >= 0 ? id : -1;
    request->authorized = ctx->authorized;
    request->reply = s_reply;
    request->transport_ctx = ctx;
    drv_admin_http_t *http = engine->http;
    ctx->request = request;
    ctx->next = http->pending;
    if (http->pending) {
        http->pending->prev = ctx;
    }
    http->pending = ctx;
    drv_admin_dispatch(engine, request); // answers now, or later from the loop
}

static void s_on_done(void *arg, drv_httpd_req_t *req)
{
    drv_engine_t *engine = arg;
    http_ctx_t *ctx = drv_httpd_user(req);
    if (!ctx) {
        return;
    }
    if (ctx->request) {
        ctx->request->transport_ctx = NULL; // the client left; the answer goes nowhere
        s_unlink(engine->http, ctx);
    }
    free(ctx);
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
        if (engine->http_listen_fd >= 0) {
            close(engine->http_listen_fd); // handed over by an upgrade; no longer wanted
            engine->http_listen_fd = -1;
        }
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
    const char *h = strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
    if (inet_pton(AF_INET, h, &addr4.sin_addr) == 1) {
        addr = (struct sockaddr *)&addr4;
    } else if (inet_pton(AF_INET6, h, &addr6.sin6_addr) == 1) {
        addr = (struct sockaddr *)&addr6;
    } else {
        snprintf(err, errlen, "engine.admin.http: %s is not an IP address", h);
        return -1;
    }
    s_raise_nofile();
    drv_admin_http_t *http = calloc(1, sizeof *http);
    if (!http) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    engine->http = http;
    const drv_config_t *config = engine->config;
    http->rules = drv_http_rules_new(listen, (const char *const *)config->http_hosts, config->http_host_count,
                                     engine->http_token);
    drv_httpd_config_t server = {
        .name = "http admin",
        .listen_fd = -1,
        .addr = addr,
        .limits = {.per_address = CONNECTIONS_PER_CLIENT,
                   .total = CONNECTIONS_TOTAL,
                   .request_ms = REQUEST_SECS * 1000,
                   .idle_ms = REQUEST_SECS * 1000,
                   .body_budget = BODY_BUDGET},
        .idle_secs = DRV_ADMIN_HTTP_IDLE_SECS,
        .max_body_bytes = DRV_ADMIN_MAX_BODY,
        .unescape = s_unescape,
        .on_head = s_on_head,
        .on_body = s_on_body,
        .on_done = s_on_done,
        .arg = engine,
    };
    char why[200];
    //  After an upgrade in place: the socket the droverd before listened on,
    //  when it is the one the config names (connections wait in its backlog).
    struct sockaddr_storage had;
    socklen_t had_len = sizeof had;
    if (engine->http_listen_fd >= 0 && getsockname(engine->http_listen_fd, (struct sockaddr *)&had, &had_len) == 0 &&
        had.ss_family == addr->sa_family &&
        ((struct sockaddr_in *)&had)->sin_port == ((struct sockaddr_in *)addr)->sin_port) {
        server.listen_fd = engine->http_listen_fd;
    } else if (engine->http_listen_fd >= 0) {
        close(engine->http_listen_fd); // the config names another address now
    }
    engine->http_listen_fd = -1;
    http->httpd = drv_httpd_new(&server, why, sizeof why);
    if (http->httpd) {
        engine->http_listen_fd = drv_httpd_listen_fd(http->httpd);
    }
    if (!http->httpd) {
        snprintf(err, errlen, "cannot listen for HTTP on %s: %s", listen, why);
        drv_admin_http_stop(engine);
        return -1;
    }
    drv_info("admin listening http=%s token=%s", listen, engine->http_token ? "required" : "off");
    return 0;
}

int drv_admin_http_fd(drv_engine_t *engine)
{
    return engine->http ? drv_httpd_fd(engine->http->httpd) : -1;
}

int64_t drv_admin_http_timeout_ms(drv_engine_t *engine)
{
    return engine->http ? drv_httpd_timeout_ms(engine->http->httpd) : -1;
}

void drv_admin_http_run(drv_engine_t *engine)
{
    if (engine->http) {
        drv_httpd_run(engine->http->httpd);
    }
}

void drv_admin_http_stop(drv_engine_t *engine)
{
    drv_admin_http_t *http = engine->http;
    if (!http) {
        return;
    }
    //  Every waiter should have been answered by now; whatever some
    //  operation still holds is answered here, and the answers given are
    //  sent before the connections close.
    while (http->pending) {
        http_ctx_t *ctx = http->pending;
        ctx->request->transport_ctx = NULL; // its owner's later reply goes nowhere
        s_unlink(http, ctx);
        drv_admin_response_t response = {0};
        drv_admin_error(&response, 503, "internal", "droverd is shutting down");
        drv_admin_http_answer(ctx->req, &response);
        drv_admin_response_clear(&response);
    }
    drv_httpd_destroy(&http->httpd, STOP_FLUSH_MS);
    drv_http_rules_destroy(&http->rules);
    free(http);
    engine->http = NULL;
}
