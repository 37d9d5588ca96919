/*  libdrover-client — see drv_client.h. One message in flight at a time;
    message ids are a per-client counter, so a late ack for an earlier message
    (one that was sent again) is recognised and skipped. */
#include "drover/drv_client.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

struct drv_client_t {
    void *ctx;        // libzmq context, owned
    void *dealer;     // connected to the broker's ack front door
    uint64_t next_id; // id of the next message
    int retry_ms;     // resend after this long without an ack
    uint64_t retries;
};

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

drv_client_t *drv_client_new(const char *endpoint)
{
    drv_client_t *self = calloc(1, sizeof *self);
    self->ctx = zmq_ctx_new();
    self->dealer = zmq_socket(self->ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(self->dealer, ZMQ_LINGER, &linger, sizeof linger);
    self->retry_ms = 1000;
    self->next_id = (uint64_t)s_now_ms() << 20; // distinct across restarts of the producer
    if (zmq_connect(self->dealer, endpoint) != 0) {
        drv_client_destroy(&self);
    }
    return self;
}

void drv_client_destroy(drv_client_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_client_t *self = *self_p;
    zmq_close(self->dealer);
    zmq_ctx_term(self->ctx);
    free(self);
    *self_p = NULL;
}

void drv_client_set_retry_ms(drv_client_t *self, int retry_ms)
{
    self->retry_ms = retry_ms > 0 ? retry_ms : 1000;
}

uint64_t drv_client_retries(const drv_client_t *self)
{
    return self->retries;
}

static int s_send(drv_client_t *self, uint64_t id, const void *data, size_t size)
{
    if (zmq_send(self->dealer, &id, sizeof id, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        return -1;
    }
    return zmq_send(self->dealer, data, size, ZMQ_DONTWAIT) < 0 ? -1 : 0;
}

//  Reads one answer; returns 1 for an ack of id, -2 for a refusal of id (err
//  set), 0 for anything else (an earlier message's late ack).
static int s_read_answer(drv_client_t *self, uint64_t id, char *err, size_t errlen)
{
    zmq_msg_t frames[2];
    zmq_msg_init(&frames[0]);
    zmq_msg_init(&frames[1]);
    int result = 0;
    if (zmq_msg_recv(&frames[0], self->dealer, 0) < 0 || !zmq_msg_more(&frames[0]) ||
        zmq_msg_recv(&frames[1], self->dealer, 0) < 0) {
        goto done;
    }
    uint64_t got;
    if (zmq_msg_size(&frames[0]) != sizeof got) {
        goto done;
    }
    memcpy(&got, zmq_msg_data(&frames[0]), sizeof got);
    if (got != id) {
        goto done;
    }
    msgpack_zone zone;
    msgpack_zone_init(&zone, 256);
    msgpack_object obj;
    size_t off = 0;
    result = 1;
    if (msgpack_unpack(zmq_msg_data(&frames[1]), zmq_msg_size(&frames[1]), &off, &zone, &obj) ==
            MSGPACK_UNPACK_SUCCESS &&
        obj.type == MSGPACK_OBJECT_MAP) {
        for (uint32_t i = 0; i < obj.via.map.size; i++) {
            msgpack_object *k = &obj.via.map.ptr[i].key, *v = &obj.via.map.ptr[i].val;
            if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == 2 && !memcmp(k->via.str.ptr, "ok", 2) &&
                v->type == MSGPACK_OBJECT_BOOLEAN && !v->via.boolean) {
                result = -2;
            }
            if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == 5 && !memcmp(k->via.str.ptr, "error", 5) &&
                v->type == MSGPACK_OBJECT_STR) {
                snprintf(err, errlen, "refused: %.*s", (int)v->via.str.size, v->via.str.ptr);
            }
        }
    }
    msgpack_zone_destroy(&zone);
done:
    zmq_msg_close(&frames[0]);
    zmq_msg_close(&frames[1]);
    return result;
}

int drv_client_send(drv_client_t *self, const void *data, size_t size, int timeout_ms, char *err, size_t errlen)
{
    uint64_t id = self->next_id++;
    int64_t deadline = s_now_ms() + timeout_ms;
    int64_t resend_at = 0;
    while (s_now_ms() < deadline) {
        if (s_now_ms() >= resend_at) {
            if (resend_at != 0) {
                self->retries++;
            }
            s_send(self, id, data, size); // may not go out yet (reconnecting): retried below
            resend_at = s_now_ms() + self->retry_ms;
        }
        int64_t wait = resend_at < deadline ? resend_at - s_now_ms() : deadline - s_now_ms();
        zmq_pollitem_t item = {self->dealer, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, wait > 0 ? (long)wait : 0) > 0) {
            int rc = s_read_answer(self, id, err, errlen);
            if (rc == 1) {
                return 0;
            }
            if (rc == -2) {
                return -2;
            }
        }
    }
    snprintf(err, errlen, "no acknowledgement within %d ms", timeout_ms);
    return -1;
}
