/*  drv_admin_zmq — the admin API over a zmq ROUTER, and the events PUB socket.
    A request is one frame {method, path, query?, body?}; the reply is one frame
    {status, body} with the same codes and bodies as HTTP. Clients may be
    DEALER (envelope: identity) or REQ (identity + empty delimiter): the reply
    goes back with whatever envelope came in. Bad frames get 400 and the socket
    keeps serving. */
#include "drv_admin.h"

#include "drover/drv_log.h"
#include "drover/drv_mpjson.h"

#include <ctype.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FRAME (8 * 1024 * 1024) // larger: the connection is dropped by libzmq
#define REQUESTS_PER_TURN 256

typedef struct {
    zmsg_t *envelope; // routing frames to send the reply back with
    drv_engine_t *engine;
} zmq_ctx_t;

static void s_send_reply(drv_engine_t *engine, zmsg_t *envelope, int status, json_t *body)
{
    json_t *reply = json_pack("{s:i, s:O}", "status", status, "body", body ? body : json_null());
    char *data;
    size_t size;
    if (drv_mpjson_encode(reply, &data, &size) == 0) {
        zmsg_addmem(envelope, data, size);
        free(data);
        zmsg_send(&envelope, engine->admin);
    }
    zmsg_destroy(&envelope);
    json_decref(reply);
}

static void s_reply(drv_admin_request_t *request, drv_admin_response_t *response)
{
    zmq_ctx_t *ctx = request->transport_ctx;
    json_t *body = response->json ? json_incref(response->json)
                                  : json_string(response->text ? response->text : "");
    if (response->location) {
        //  HTTP says it in a header; over zmq it rides in the body.
        if (json_is_object(body)) {
            json_object_set_new(body, "location", json_string(response->location));
        }
    }
    s_send_reply(ctx->engine, ctx->envelope, response->status, body);
    json_decref(body);
    free(ctx);
    free(request->path);
    json_decref(request->query);
    json_decref(request->body);
    free(request);
}

static void s_error_reply(drv_engine_t *engine, zmsg_t *envelope, int status, const char *kind,
                          const char *message)
{
    json_t *body = json_pack("{s:{s:s, s:s}}", "error", "kind", kind, "message", message);
    s_send_reply(engine, envelope, status, body);
    json_decref(body);
}

//  "a=1&b=x" into query (values are not percent-decoded beyond %XX).
static void s_parse_query(const char *text, json_t *query)
{
    char *copy = strdup(text);
    char *save = NULL;
    for (char *pair = strtok_r(copy, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(pair, '=');
        if (eq) {
            *eq = 0;
        }
        json_object_set_new(query, pair, json_string(eq ? eq + 1 : ""));
    }
    free(copy);
}

//  Validates the envelope; returns a request or NULL with why.
static drv_admin_request_t *s_request(json_t *doc, char *why, size_t whylen)
{
    if (!json_is_object(doc)) {
        snprintf(why, whylen, "the request must be a map {method, path, query?, body?}");
        return NULL;
    }
    json_t *method = json_object_get(doc, "method");
    json_t *path = json_object_get(doc, "path");
    json_t *query = json_object_get(doc, "query");
    if (!json_is_string(method) || json_string_length(method) == 0 || json_string_length(method) > 7) {
        snprintf(why, whylen, "method: must be GET, PUT, POST or DELETE");
        return NULL;
    }
    if (!json_is_string(path) || json_string_value(path)[0] != '/') {
        snprintf(why, whylen, "path: must be a string starting with /");
        return NULL;
    }
    if (query && !json_is_object(query) && !json_is_null(query)) {
        snprintf(why, whylen, "query: must be a map of strings");
        return NULL;
    }
    drv_admin_request_t *request = calloc(1, sizeof *request);
    for (size_t i = 0; i < json_string_length(method); i++) {
        request->method[i] = (char)toupper((unsigned char)json_string_value(method)[i]);
    }
    request->query = json_object();
    const char *key;
    json_t *value;
    json_object_foreach(query, key, value)
    {
        if (json_is_string(value)) {
            json_object_set(request->query, key, value);
        } else if (json_is_boolean(value)) {
            json_object_set_new(request->query, key, json_string(json_is_true(value) ? "true" : "false"));
        } else if (json_is_integer(value)) {
            char num[32];
            snprintf(num, sizeof num, "%lld", (long long)json_integer_value(value));
            json_object_set_new(request->query, key, json_string(num));
        } else {
            snprintf(why, whylen, "query.%s: must be a string", key);
            json_decref(request->query);
            free(request);
            return NULL;
        }
    }
    const char *full = json_string_value(path);
    const char *mark = strchr(full, '?');
    request->path = mark ? strndup(full, (size_t)(mark - full)) : strdup(full);
    if (mark) {
        s_parse_query(mark + 1, request->query);
    }
    json_t *body = json_object_get(doc, "body");
    request->body = body && !json_is_null(body) ? json_incref(body) : NULL;
    request->transport = "zmq";
    request->authorized = true; // ipc: file permissions; tcp: CURVE
    request->reply = s_reply;
    return request;
}

static void s_handle(drv_engine_t *engine, zmsg_t *msg)
{
    zframe_t *payload = zmsg_last(msg);
    if (zmsg_size(msg) < 2 || !payload) {
        zmsg_destroy(&msg);
        return; // nothing to route a reply to
    }
    zmsg_remove(msg, payload); // msg is now the envelope
    if (zframe_size(payload) > DRV_ADMIN_MAX_BODY) {
        char why[120];
        snprintf(why, sizeof why, "request of %zu bytes is larger than %d", zframe_size(payload),
                 DRV_ADMIN_MAX_BODY);
        s_error_reply(engine, msg, 413, "payload_too_large", why);
        zframe_destroy(&payload);
        return;
    }
    char why[300] = "";
    json_t *doc = drv_mpjson_decode(zframe_data(payload), zframe_size(payload), why, sizeof why);
    zframe_destroy(&payload);
    drv_admin_request_t *request = NULL;
    if (doc) {
        request = s_request(doc, why, sizeof why);
    } else {
        char full[340];
        snprintf(full, sizeof full, "request frame is not valid msgpack: %s", why);
        snprintf(why, sizeof why, "%s", full);
    }
    json_decref(doc);
    if (!request) {
        s_error_reply(engine, msg, 400, "invalid_request", why);
        return;
    }
    zmq_ctx_t *ctx = calloc(1, sizeof *ctx);
    ctx->envelope = msg;
    ctx->engine = engine;
    request->transport_ctx = ctx;
    drv_admin_dispatch(engine, request);
}

void drv_admin_zmq_on_readable(drv_engine_t *engine)
{
    for (int i = 0; i < REQUESTS_PER_TURN && (zsock_events(engine->admin) & ZMQ_POLLIN); i++) {
        zmsg_t *msg = zmsg_recv(engine->admin);
        if (!msg) {
            break;
        }
        s_handle(engine, msg);
    }
}

static int s_secure_socket(drv_engine_t *engine, zsock_t *sock, zcert_t *server_cert)
{
    (void)engine;
    if (server_cert) {
        zcert_apply(server_cert, sock);
        zsock_set_curve_server(sock, 1);
        zsock_set_zap_domain(sock, "drover");
    }
    return 0;
}

static void s_chmod_ipc(const char *endpoint)
{
    if (strncmp(endpoint, "ipc://", 6) == 0) {
        chmod(endpoint + 6, 0600);
    }
}

int drv_admin_zmq_start(drv_engine_t *engine, char *err, size_t errlen)
{
    drv_config_t *config = engine->config;
    zcert_t *server_cert = NULL;
    if (config->curve_server_secret_file) {
        server_cert = zcert_load(config->curve_server_secret_file);
        if (!server_cert) {
            snprintf(err, errlen, "engine.admin.curve.server_secret_file: cannot load %s",
                     config->curve_server_secret_file);
            return -1;
        }
        engine->auth = zactor_new(zauth, NULL);
        zstr_sendx(engine->auth, "CURVE", config->curve_clients_dir, NULL);
        zsock_wait(engine->auth);
    }
    engine->admin = zsock_new(ZMQ_ROUTER);
    zsock_set_maxmsgsize(engine->admin, MAX_FRAME);
    zsock_set_linger(engine->admin, 0);
    zsock_set_router_mandatory(engine->admin, 0); // a client that left is not our problem
    s_secure_socket(engine, engine->admin, server_cert);
    if (zsock_bind(engine->admin, "%s", config->admin_zmq) < 0) {
        snprintf(err, errlen, "cannot bind admin endpoint %s: %s", config->admin_zmq,
                 zmq_strerror(zmq_errno()));
        zcert_destroy(&server_cert);
        return -1;
    }
    s_chmod_ipc(config->admin_zmq);
    engine->events = zsock_new(ZMQ_PUB);
    zsock_set_linger(engine->events, 0);
    zsock_set_sndhwm(engine->events, 10000);
    s_secure_socket(engine, engine->events, server_cert);
    zcert_destroy(&server_cert);
    if (zsock_bind(engine->events, "%s", config->admin_events) < 0) {
        snprintf(err, errlen, "cannot bind events endpoint %s: %s", config->admin_events,
                 zmq_strerror(zmq_errno()));
        return -1;
    }
    s_chmod_ipc(config->admin_events);
    drv_info("admin listening zmq=%s events=%s curve=%s", config->admin_zmq, config->admin_events,
             config->curve_server_secret_file ? "on" : "off");
    return 0;
}

void drv_admin_zmq_stop(drv_engine_t *engine)
{
    zsock_destroy(&engine->admin);
    zsock_destroy(&engine->events);
    zactor_destroy(&engine->auth);
}
