/*  exporter:zmq — sends each batch downstream as one msgpack array, on a
    PUSH (load-balanced, back-pressure) or PUB (fan-out, drops when slow)
    socket. It never blocks the instance's loop: when the socket's queue is
    full (hwm batches for a slow or absent downstream), the batch is held,
    in order with the ones after it, and retried on a timer (1 ms doubling
    to 100 ms). Held batches are not settled; past its queue (QUEUE_BYTES unless `queue` says) the
    exporter is backlogged and the receivers push back. */
#include "drv_hold.h"
#include "drv_node.h"
#include "drv_schemas.h"

#include "drover/drv_limits.h"

#include <czmq.h>

#define QUEUE_BYTES (64 * 1024 * 1024) // queue.max_bytes when not given

typedef struct {
    drv_hold_t *hold; // first: batches the socket did not take yet (drv_hold's hooks find it there)
    zsock_t *socket;
} zmq_exporter_t;

//  All or nothing (drv_hold_out_fn): a full queue (hwm) takes nothing now;
//  any other failure never will.
static ssize_t s_send(void *arg, const char *data, size_t len, const char **why)
{
    zmq_exporter_t *self = arg;
    while (zmq_send(zsock_resolve(self->socket), data, len, ZMQ_DONTWAIT) < 0) {
        if (zmq_errno() == EAGAIN) {
            *why = "downstream is not keeping up";
            return 0;
        }
        if (zmq_errno() != EINTR) {
            *why = zmq_strerror(zmq_errno());
            return -1;
        }
    }
    return (ssize_t)len;
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    zmq_exporter_t *self = calloc(1, sizeof *self);
    node->state = self;
    const char *kind = json_string_value(json_object_get(config, "socket"));
    const char *endpoint = json_string_value(json_object_get(config, "endpoint"));
    //  Back-pressure is normal here, not an error: waiting batches are not counted.
    drv_hold_config_t hold = {.out = s_send,
                              .arg = self,
                              .first_ms = 1,
                              .max_ms = 100,
                              .waits_are_errors = false,
                              .config = config,
                              .queue_bytes = QUEUE_BYTES};
    char why[200];
    self->hold = drv_hold_new(node, &hold, why, sizeof why);
    if (!self->hold) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    self->socket = zsock_new(kind && strcmp(kind, "pub") == 0 ? ZMQ_PUB : ZMQ_PUSH);
    if (self->socket) {
        //  Batches queued for a slow or absent downstream: bounded (set before
        //  connect), so a stalled consumer becomes back-pressure, not memory.
        int64_t hwm = json_integer_value(json_object_get(config, "hwm"));
        zsock_set_sndhwm(self->socket, hwm > 0 ? (int)hwm : 100);
    }
    if (!self->socket || zsock_connect(self->socket, "%s", endpoint) != 0) {
        snprintf(err, errlen, "node %s: cannot connect %s: %s", node->id, endpoint, zmq_strerror(zmq_errno()));
        return -1;
    }
    zsock_set_linger(self->socket, 5000);
    return 0;
}

static void s_destroy(drv_node_t *node)
{
    zmq_exporter_t *self = node->state;
    if (self) {
        zsock_destroy(&self->socket);
        drv_hold_destroy(&self->hold); // unsettled: redelivered to the next generation
        free(self);
    }
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    zmq_exporter_t *self = node->state;
    drv_buf_t *out = drv_node_buffer(node);
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, drv_buf_msgpack_write);
    msgpack_pack_array(&pk, n);
    for (size_t i = 0; i < n; i++) {
        msgpack_pack_object(&pk, records[i]);
    }
    drv_hold_put(self->hold, node, n, out->data, out->len);
}

const drv_node_kind_t drv_exporter_zmq = {
    .schema = &drv_schema_exporter_zmq,
    .init = s_init,
    .run = s_run,
    .fd = drv_hold_node_fd,
    .readable = drv_hold_node_readable,
    .holding = drv_hold_node_holding,
    .backlogged = drv_hold_node_backlogged,
    .backlog = drv_hold_node_backlog,
    .queue = drv_hold_node_queue,
    .destroy = s_destroy,
};
