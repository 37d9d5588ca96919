/*  drv_front_door — binding, reading and answering one producer endpoint. */
#include "drv_front_door.h"

#include "drover/drv_batch.h"
#include "drover/drv_log.h"
#include "drover/drv_msg.h"
#include "drover/drv_time.h"

#include <msgpack.h>
#include <string.h>
#include <sys/stat.h>

//  Messages ZeroMQ queues per producer connection before that producer
//  blocks, at most: with the held bytes of each front door bounded by its
//  buffer, this is what is left outside the broker's count.
#define HWM_MAX 100

//  ZeroMQ counts messages, not bytes: each connection may queue as many
//  messages of the largest size as the buffer holds (16 with the defaults;
//  fewer costs throughput: 1 halved B1).
static int s_hwm(int64_t max_message_bytes, int64_t buffer_bytes)
{
    int64_t hwm = buffer_bytes / max_message_bytes;
    return hwm < 1 ? 1 : hwm > HWM_MAX ? HWM_MAX : (int)hwm;
}

static zframe_t *s_batch_header(const char *node)
{
    drv_msg_t header;
    drv_msg_init(&header, DRV_MSG_BATCH);
    drv_msg_set_str(&header, DRV_F_NODE, node);
    char *data = NULL;
    size_t size = 0;
    zframe_t *frame = drv_msg_encode(&header, &data, &size) == 0 ? zframe_new(data, size) : NULL;
    free(data);
    drv_msg_clear(&header);
    return frame;
}

drv_front_door_t *drv_front_door_new(const char *pipeline, const char *node, const char *endpoint, bool ack,
                                     int64_t max_message_bytes, int64_t buffer_bytes, char *reason, size_t reason_len)
{
    //  Binding an ipc endpoint unlinks whatever has its name: validation
    //  refused a file that is not a socket, and so does the bind, in case one
    //  appeared since.
    struct stat st;
    if (!strncmp(endpoint, "ipc://", 6) && lstat(endpoint + 6, &st) == 0 && !S_ISSOCK(st.st_mode)) {
        snprintf(reason, reason_len, "cannot bind %s: it exists and is not a socket", endpoint);
        return NULL;
    }
    zframe_t *header = s_batch_header(node);
    if (!header) {
        snprintf(reason, reason_len, "cannot encode the batch header of node %s", node);
        return NULL;
    }
    drv_front_door_t *self = calloc(1, sizeof *self);
    self->pipeline = strdup(pipeline);
    self->node = strdup(node);
    self->endpoint = strdup(endpoint);
    self->ack = ack;
    self->max_message_bytes = max_message_bytes;
    self->route = drv_route_new(pipeline, node, endpoint, header);
    zframe_destroy(&header);
    self->sock = zsock_new(ack ? ZMQ_ROUTER : ZMQ_PULL);
    zsock_set_linger(self->sock, 0);
    zsock_set_rcvhwm(self->sock, s_hwm(max_message_bytes, buffer_bytes));
    //  Up to twice the limit a message arrives and is refused with a reason;
    //  past that libzmq drops the connection: memory stays bounded.
    zsock_set_maxmsgsize(self->sock, max_message_bytes * 2);
    if (zsock_bind(self->sock, "%s", endpoint) < 0) {
        snprintf(reason, reason_len, "cannot bind %s: %s", endpoint, zmq_strerror(zmq_errno()));
        drv_front_door_destroy(&self);
    }
    return self;
}

void drv_front_door_destroy(drv_front_door_t **self_p)
{
    drv_front_door_t *self = *self_p;
    if (self) {
        zsock_destroy(&self->sock);
        drv_route_unref(&self->route);
        free(self->pipeline);
        free(self->node);
        free(self->endpoint);
        free(self);
        *self_p = NULL;
    }
}

void drv_front_door_close(drv_front_door_t *self, int64_t flush_ms)
{
    if (self->closing) {
        return;
    }
    self->closing = true;
    self->close_deadline_ms = drv_time_mono_ms() + flush_ms;
    zsock_unbind(self->sock, "%s", self->endpoint);
    drv_info("front door closing pipeline=%s node=%s endpoint=%s", self->pipeline, self->node, self->endpoint);
}

void drv_front_door_answer(drv_front_door_t *self, const zframe_t *reply_to, const zframe_t *msg_id, const char *error)
{
    msgpack_sbuffer sbuf;
    msgpack_sbuffer_init(&sbuf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, error ? 2 : 1);
    msgpack_pack_str_with_body(&pk, "ok", 2);
    error ? msgpack_pack_false(&pk) : msgpack_pack_true(&pk);
    if (error) {
        msgpack_pack_str_with_body(&pk, "error", 5);
        msgpack_pack_str_with_body(&pk, error, strlen(error));
    }
    void *sock = zsock_resolve(self->sock);
    zframe_t *to = (zframe_t *)reply_to, *id = (zframe_t *)msg_id;
    if (zmq_send(sock, zframe_data(to), zframe_size(to), ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0 &&
        zmq_send(sock, zframe_data(id), zframe_size(id), ZMQ_SNDMORE) >= 0) {
        zmq_send(sock, sbuf.data, sbuf.size, 0);
    }
    msgpack_sbuffer_destroy(&sbuf);
}

void drv_front_door_from_clear(drv_pending_t *from)
{
    zframe_destroy(&from->reply_to);
    zframe_destroy(&from->msg_id);
}

//  Counts a message refused for its size; logs at most once a second.
static void s_refuse_large(drv_front_door_t *self, drv_refusals_t *refusals, size_t size, char *err, size_t errlen)
{
    refusals->total++;
    snprintf(err, errlen, "message of %zu bytes is larger than engine.limits.max_message_bytes (%lld)", size,
             (long long)self->max_message_bytes);
    int64_t now = drv_time_mono_ms();
    if (now >= refusals->next_log_ms) {
        drv_warn("refused producer message pipeline=%s node=%s reason=\"%s\" refused_total=%lld", self->pipeline,
                 self->node, err, (long long)refusals->total);
        refusals->next_log_ms = now + 1000;
    }
}

//  [producer][id][payload]: the payload must be a record or a batch before
//  anything is sent on, since an ack promises the records were exported.
//  Returns 1, 0 (nothing queued) or -1 (refused and answered, or not our
//  protocol: nothing to answer to reliably).
static int s_recv_ack(drv_front_door_t *self, drv_refusals_t *refusals, zmq_msg_t *payload, drv_pending_t *from)
{
    if (!(zsock_events(self->sock) & ZMQ_POLLIN)) {
        return 0;
    }
    zmsg_t *msg = zmsg_recv(self->sock);
    if (!msg) {
        return 0;
    }
    if (zmsg_size(msg) != 3) {
        zmsg_destroy(&msg);
        return -1;
    }
    from->reply_to = zmsg_pop(msg);
    from->msg_id = zmsg_pop(msg);
    zframe_t *data = zmsg_pop(msg);
    zmsg_destroy(&msg);
    char err[200] = "";
    if (zframe_size(from->msg_id) == 0 || zframe_size(from->msg_id) > 64) {
        snprintf(err, sizeof err, "message id must be 1 to 64 bytes");
    } else if ((int64_t)zframe_size(data) > self->max_message_bytes) {
        s_refuse_large(self, refusals, zframe_size(data), err, sizeof err);
    } else {
        msgpack_zone zone;
        msgpack_zone_init(&zone, 1024);
        msgpack_object root;
        const msgpack_object *records;
        drv_batch_decode(zframe_data(data), zframe_size(data), &zone, &root, &records, err, sizeof err);
        msgpack_zone_destroy(&zone);
    }
    if (err[0]) {
        drv_front_door_answer(self, from->reply_to, from->msg_id, err);
        zframe_destroy(&data);
        drv_front_door_from_clear(from);
        return -1;
    }
    zmq_msg_init_size(payload, zframe_size(data));
    memcpy(zmq_msg_data(payload), zframe_data(data), zframe_size(data));
    zframe_destroy(&data);
    return 1;
}

int drv_front_door_recv(drv_front_door_t *self, drv_refusals_t *refusals, zmq_msg_t *payload, drv_pending_t *from)
{
    if (self->ack) {
        return s_recv_ack(self, refusals, payload, from);
    }
    zmq_msg_init(payload);
    if (zmq_msg_recv(payload, zsock_resolve(self->sock), ZMQ_DONTWAIT) < 0) {
        int empty = zmq_errno() == EAGAIN;
        zmq_msg_close(payload);
        return empty ? 0 : -2;
    }
    if ((int64_t)zmq_msg_size(payload) > self->max_message_bytes) {
        //  No one to answer on a PULL front door: logged and counted.
        char err[200];
        s_refuse_large(self, refusals, zmq_msg_size(payload), err, sizeof err);
        zmq_msg_close(payload);
        return -1;
    }
    return 1;
}
