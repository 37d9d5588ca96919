/*  drv_admin_zap — see the header. libzmq sends one request per handshake
    of a socket whose zap_domain is set: version "1.0", request id, domain,
    address, routing id, mechanism, then the credentials (for CURVE, the
    client's 32-byte public key); the reply echoes the request id with
    "200" or "400". */
#include "drv_admin_zap.h"

#include "drover/drv_log.h"

#include <string.h>

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define REQUESTS_PER_TURN 64

struct drv_admin_zap_t {
    zsock_t *sock;       // REP
    zcertstore_t *certs; // the clients' public keys; NULL: any key (clients_dir "*", insecure)
};

drv_admin_zap_t *drv_admin_zap_new(const char *clients_dir, char *err, size_t errlen)
{
    drv_admin_zap_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    bool any = strcmp(clients_dir, "*") == 0;
    self->certs = any ? NULL : zcertstore_new(clients_dir);
    self->sock = zsock_new(ZMQ_REP);
    if ((!any && !self->certs) || !self->sock || zsock_bind(self->sock, ZAP_ENDPOINT) != 0) {
        snprintf(err, errlen, "cannot start CURVE authentication: %s", zmq_strerror(zmq_errno()));
        drv_admin_zap_destroy(&self);
        return NULL;
    }
    zsock_set_linger(self->sock, 0);
    return self;
}

void drv_admin_zap_destroy(drv_admin_zap_t **self_p)
{
    drv_admin_zap_t *self = *self_p;
    if (!self) {
        return;
    }
    *self_p = NULL;
    zsock_destroy(&self->sock);
    zcertstore_destroy(&self->certs);
    free(self);
}

zsock_t *drv_admin_zap_socket(drv_admin_zap_t *self)
{
    return self ? self->sock : NULL;
}

static bool s_frame_is(zframe_t *frame, const char *text)
{
    return frame && zframe_size(frame) == strlen(text) && memcmp(zframe_data(frame), text, strlen(text)) == 0;
}

//  One request in, one reply out (a REP socket must answer each).
static void s_answer(drv_admin_zap_t *self, zmsg_t *request)
{
    zframe_t *version = zmsg_pop(request);
    zframe_t *id = zmsg_pop(request);
    zframe_t *domain = zmsg_pop(request);
    zframe_t *address = zmsg_pop(request);
    zframe_t *identity = zmsg_pop(request);
    zframe_t *mechanism = zmsg_pop(request);
    zframe_t *key = zmsg_pop(request);
    const char *status = "400", *text = "unknown client key";
    char client[41] = "";
    if (!s_frame_is(version, "1.0") || !id) {
        status = "500";
        text = "malformed ZAP request";
    } else if (!s_frame_is(mechanism, "CURVE") || !key || zframe_size(key) != 32) {
        text = "only CURVE is taken";
    } else {
        zmq_z85_encode(client, zframe_data(key), 32);
        if (!self->certs || zcertstore_lookup(self->certs, client)) {
            status = "200";
            text = "OK";
        }
    }
    char *from = address ? zframe_strdup(address) : NULL;
    drv_debug("zap: %s client=%s from=%s", status, client[0] ? client : "-", from ? from : "?");
    free(from);
    zmsg_t *reply = zmsg_new();
    zmsg_addstr(reply, "1.0");
    if (id) {
        zmsg_append(reply, &id);
    } else {
        zmsg_addstr(reply, "");
    }
    zmsg_addstr(reply, status);
    zmsg_addstr(reply, text);
    zmsg_addstr(reply, !strcmp(status, "200") ? client : "");
    zmsg_addstr(reply, "");
    zmsg_send(&reply, self->sock);
    zframe_destroy(&version);
    zframe_destroy(&id);
    zframe_destroy(&domain);
    zframe_destroy(&address);
    zframe_destroy(&identity);
    zframe_destroy(&mechanism);
    zframe_destroy(&key);
}

void drv_admin_zap_on_readable(drv_admin_zap_t *self)
{
    for (int i = 0; i < REQUESTS_PER_TURN && (zsock_events(self->sock) & ZMQ_POLLIN); i++) {
        zmsg_t *request = zmsg_recv(self->sock);
        if (!request) {
            break;
        }
        s_answer(self, request);
        zmsg_destroy(&request);
    }
}
