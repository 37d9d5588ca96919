/*  exporter:zmq — sends each batch downstream as one msgpack array, on a
    PUSH (load-balanced, back-pressure) or PUB (fan-out, drops when slow)
    socket. It never blocks the instance's loop: when the socket's queue is
    full (hwm batches for a slow or absent downstream), the batch is held,
    in order with the ones after it, and retried on a timer (1 ms doubling
    to 100 ms). Held batches are not settled; past HELD_BATCHES held the
    exporter is backlogged and the receivers push back. */
#include "drv_node.h"

#include "drover/drv_limits.h"

#include <czmq.h>
#include <sys/timerfd.h>

#define HELD_BATCHES 16 // held past this: backlogged
#define RETRY_FIRST_MS 1
#define RETRY_MAX_MS 100

typedef struct held_t held_t;
struct held_t {
    held_t *next;
    int64_t input;
    size_t records, len;
    char data[];
};

typedef struct {
    zsock_t *socket;
    held_t *head, *tail;     // batches the socket did not take yet, oldest first
    size_t held;
    int timer_fd;            // fires the next retry while something is held
    int64_t backoff_ms;
} zmq_exporter_t;

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    zmq_exporter_t *self = calloc(1, sizeof *self);
    node->state = self;
    self->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    const char *kind = json_string_value(json_object_get(config, "socket"));
    const char *endpoint = json_string_value(json_object_get(config, "endpoint"));
    self->socket = zsock_new(kind && strcmp(kind, "pub") == 0 ? ZMQ_PUB : ZMQ_PUSH);
    if (self->socket) {
        //  Batches queued for a slow or absent downstream: bounded (set before
        //  connect), so a stalled consumer becomes back-pressure, not memory.
        int64_t hwm = json_integer_value(json_object_get(config, "hwm"));
        zsock_set_sndhwm(self->socket, hwm > 0 ? (int)hwm : 100);
    }
    if (!self->socket || self->timer_fd < 0 || zsock_connect(self->socket, "%s", endpoint) != 0) {
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
        if (self->timer_fd >= 0) {
            close(self->timer_fd);
        }
        while (self->head) { // unsettled: redelivered to the next generation
            held_t *next = self->head->next;
            free(self->head);
            self->head = next;
        }
        free(self);
    }
}

//  0 sent, 1 the socket is full (try later), -1 failed for good (errno in zmq_errno).
static int s_send(zmq_exporter_t *self, const char *data, size_t len)
{
    while (zmq_send(zsock_resolve(self->socket), data, len, ZMQ_DONTWAIT) < 0) {
        if (zmq_errno() == EAGAIN) {
            return 1;
        }
        if (zmq_errno() != EINTR) {
            return -1;
        }
    }
    return 0;
}

static void s_arm(zmq_exporter_t *self)
{
    struct itimerspec when = {.it_value = {.tv_sec = self->backoff_ms / 1000,
                                           .tv_nsec = (self->backoff_ms % 1000) * 1000000L}};
    timerfd_settime(self->timer_fd, 0, &when, NULL);
    self->backoff_ms = self->backoff_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : self->backoff_ms * 2;
}

//  Sends the held batches, oldest first, as far as the socket takes them.
static void s_send_held(drv_node_t *node)
{
    zmq_exporter_t *self = node->state;
    while (self->head) {
        held_t *h = self->head;
        int rc = s_send(self, h->data, h->len);
        if (rc == 1) {
            s_arm(self);
            return;
        }
        if (rc < 0) {
            drv_node_export_error(node, h->records, zmq_strerror(zmq_errno()));
        } else {
            drv_node_count_out(node, h->records);
        }
        self->head = h->next;
        if (!self->head) {
            self->tail = NULL;
        }
        self->held--;
        free(h);
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
    if (!self->head) {
        int rc = s_send(self, out->data, out->len);
        if (rc == 0) {
            drv_node_count_out(node, n);
            return;
        }
        if (rc < 0) {
            drv_node_export_error(node, n, zmq_strerror(zmq_errno()));
            return;
        }
    }
    held_t *h = malloc(sizeof *h + out->len);
    if (!h) {
        drv_node_export_error(node, n, "out of memory holding a batch downstream did not take");
        return;
    }
    *h = (held_t){.input = drv_node_input(node), .records = n, .len = out->len};
    memcpy(h->data, out->data, out->len);
    self->held++;
    if (self->tail) {
        self->tail->next = h;
        self->tail = h;
        return;
    }
    self->head = self->tail = h; // back-pressure from downstream: retried, never waited for
    self->backoff_ms = RETRY_FIRST_MS;
    s_arm(self);
}

static int s_fd(drv_node_t *node)
{
    zmq_exporter_t *self = node->state;
    return self && self->head ? self->timer_fd : -1;
}

static int s_readable(drv_node_t *node)
{
    zmq_exporter_t *self = node->state;
    uint64_t expirations;
    if (read(self->timer_fd, &expirations, sizeof expirations) > 0) {
        s_send_held(node);
    }
    return 0;
}

static int64_t s_holding(drv_node_t *node)
{
    zmq_exporter_t *self = node->state;
    return self && self->head ? self->head->input : -1;
}

static bool s_backlogged(drv_node_t *node)
{
    zmq_exporter_t *self = node->state;
    return self && self->held > HELD_BATCHES;
}

const drv_node_kind_t drv_exporter_zmq = {
    .schema = {.name = "exporter:zmq",
               .role = DRV_ROLE_EXPORTER,
               .keys = {{"endpoint", DRV_KEY_ENDPOINT, true, NULL, NULL, 0, false},
                        {"socket", DRV_KEY_CHOICE, false, "\"push\"", "push pub", 0, false},
                        {"hwm", DRV_KEY_NONNEG_INT, false, "100", NULL, DRV_LIMIT_HWM, false}}},
    .init = s_init,
    .run = s_run,
    .fd = s_fd,
    .readable = s_readable,
    .holding = s_holding,
    .backlogged = s_backlogged,
    .destroy = s_destroy,
};
