/*  drv_admin_zmq — the admin API over a zmq ROUTER, and the events PUB socket.
    A request is one frame {method, path, query?, body?}; the reply is one frame
    {status, body} with the same codes and bodies as HTTP. Clients may be
    DEALER (envelope: identity) or REQ (identity + empty delimiter): the reply
    goes back with whatever envelope came in. Bad frames get 400 and the socket
    keeps serving. */
#include "drv_admin_zmq.h"
#include "drv_admin_zap.h"
#include "drv_admin.h"
#include "drv_admin_request.h"

#include "drover/drv_log.h"
#include "drover/drv_mpjson.h"

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
    json_t *body = response->json ? json_incref(response->json) : json_string(response->text ? response->text : "");
    if (response->location) {
        //  HTTP says it in a header; over zmq it rides in the body.
        if (json_is_object(body)) {
            json_object_set_new(body, "location", json_string(response->location));
        }
    }
    s_send_reply(ctx->engine, ctx->envelope, response->status, body);
    json_decref(body);
    free(ctx);
    drv_admin_request_free(request);
}

static void s_error_reply(drv_engine_t *engine, zmsg_t *envelope, int status, const char *kind, const char *message)
{
    drv_admin_response_t response = {0};
    drv_admin_error(&response, status, kind, "%s", message);
    s_send_reply(engine, envelope, status, response.json);
    drv_admin_response_clear(&response);
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
        snprintf(why, sizeof why, "request of %zu bytes is larger than %d", zframe_size(payload), DRV_ADMIN_MAX_BODY);
        s_error_reply(engine, msg, 413, "payload_too_large", why);
        zframe_destroy(&payload);
        return;
    }
    char why[340] = "";
    drv_admin_request_t *request =
        drv_admin_envelope_decode(zframe_data(payload), zframe_size(payload), why, sizeof why);
    zframe_destroy(&payload);
    if (!request) {
        s_error_reply(engine, msg, 400, "invalid_request", why);
        return;
    }
    zmq_ctx_t *ctx = calloc(1, sizeof *ctx);
    ctx->envelope = msg;
    ctx->engine = engine;
    request->transport = "zmq";
    request->authorized = true; // ipc: file permissions; tcp: CURVE
    request->reply = s_reply;
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
        engine->zap = drv_admin_zap_new(config->curve_clients_dir, err, errlen);
        if (!engine->zap) {
            zcert_destroy(&server_cert);
            return -1;
        }
    }
    engine->admin = zsock_new(ZMQ_ROUTER);
    zsock_set_maxmsgsize(engine->admin, MAX_FRAME);
    zsock_set_linger(engine->admin, 0);
    zsock_set_router_mandatory(engine->admin, 0); // a client that left is not our problem
    s_secure_socket(engine, engine->admin, server_cert);
    if (zsock_bind(engine->admin, "%s", config->admin_zmq) < 0) {
        snprintf(err, errlen, "cannot bind admin endpoint %s: %s", config->admin_zmq, zmq_strerror(zmq_errno()));
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
        snprintf(err, errlen, "cannot bind events endpoint %s: %s", config->admin_events, zmq_strerror(zmq_errno()));
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
    drv_admin_zap_destroy(&engine->zap);
}
