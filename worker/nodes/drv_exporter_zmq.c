/*  exporter:zmq — sends each batch downstream as one msgpack array, on a
    PUSH (load-balanced, back-pressure) or PUB (fan-out, drops when slow)
    socket. A full queue blocks the batch, heartbeating, until it drains. */
#include "drv_node.h"

#include "drover/drv_limits.h"

#include <czmq.h>

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    const char *kind = json_string_value(json_object_get(config, "socket"));
    const char *endpoint = json_string_value(json_object_get(config, "endpoint"));
    zsock_t *socket = zsock_new(kind && strcmp(kind, "pub") == 0 ? ZMQ_PUB : ZMQ_PUSH);
    node->state = socket;
    if (socket) {
        //  Batches queued for a slow or absent downstream: bounded (set before
        //  connect), so a stalled consumer becomes back-pressure, not memory.
        int64_t hwm = json_integer_value(json_object_get(config, "hwm"));
        zsock_set_sndhwm(socket, hwm > 0 ? (int)hwm : 100);
    }
    if (!socket || zsock_connect(socket, "%s", endpoint) != 0) {
        snprintf(err, errlen, "node %s: cannot connect %s: %s", node->id, endpoint, zmq_strerror(zmq_errno()));
        return -1;
    }
    zsock_set_linger(socket, 5000);
    return 0;
}

static void s_destroy(drv_node_t *node)
{
    zsock_t *socket = node->state;
    zsock_destroy(&socket);
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    drv_buf_t *out = drv_node_buffer(node);
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, drv_buf_msgpack_write);
    msgpack_pack_array(&pk, n);
    for (size_t i = 0; i < n; i++) {
        msgpack_pack_object(&pk, records[i]);
    }
    void *socket = zsock_resolve(node->state);
    while (zmq_send(socket, out->data, out->len, ZMQ_DONTWAIT) < 0) {
        if (zmq_errno() != EAGAIN && zmq_errno() != EINTR) {
            drv_node_export_error(node, n, zmq_strerror(zmq_errno()));
            return;
        }
        //  Back-pressure from downstream: wait, but keep the instance alive.
        if (drv_node_stalled(node)) {
            drv_node_export_error(node, n, "stopped while blocked downstream");
            return;
        }
        zmq_pollitem_t item = {socket, 0, ZMQ_POLLOUT, 0};
        zmq_poll(&item, 1, 100);
    }
    drv_node_count_out(node, n);
}

const drv_node_kind_t drv_exporter_zmq = {
    .schema = {.name = "exporter:zmq",
               .role = DRV_ROLE_EXPORTER,
               .keys = {{"endpoint", DRV_KEY_ENDPOINT, true, NULL, NULL, 0, false},
                        {"socket", DRV_KEY_CHOICE, false, "\"push\"", "push pub", 0, false},
                        {"hwm", DRV_KEY_NONNEG_INT, false, "100", NULL, DRV_LIMIT_HWM, false}}},
    .init = s_init,
    .run = s_run,
    .destroy = s_destroy,
};
