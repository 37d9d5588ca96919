/*  drv_feed — the instance's side of the broker (see the header).

    The order rule: the broker writes to the ring only while no batch it
    sent over the socket is untaken, and sends one over the socket only
    while the ring is empty; so whatever a socket message finds in the ring
    was put there before it was sent, and is taken first. */
#include "drv_feed.h"
#include "drv_unsettled.h"

#include "drover/drv_log.h"
#include "drover/drv_msg_send.h"
#include "drover/drv_ring.h"
#include "drover/drv_time.h"

#include <czmq.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define BATCHES_PER_ROUND 64

struct drv_feed_t {
    char *instance;
    zsock_t *data;                // DEALER to the broker
    drv_ring_t *ring;             // the data ring offered to the broker, or NULL
    int64_t credit_window;        // batches the broker may send ahead
    int64_t credit_owed;          // batches taken into the DAG and not yet re-credited
    int64_t acked_owed;           // batches settled and not yet acknowledged
    drv_unsettled_t unsettled;    // the broker's batches taken and not yet settled
    int64_t batches;              // batches taken from the broker
    int64_t rejected;             // producer messages refused as junk
    int64_t next_rejected_log_ms; // mono: refusals are logged at most once a second
};

drv_feed_t *drv_feed_new(const char *instance, const char *endpoint, int64_t credit_window, bool ring, char *err,
                         size_t errlen)
{
    drv_feed_t *self = calloc(1, sizeof *self);
    self->instance = strdup(instance);
    self->credit_window = credit_window;
    self->data = zsock_new(ZMQ_DEALER);
    zsock_set_identity(self->data, instance);
    zsock_set_linger(self->data, 2000);      // the last acks must reach the broker
    zsock_set_rcvhwm(self->data, 0);         // the credit window bounds what is in flight
    zsock_set_reconnect_ivl(self->data, 10); // the broker may be (re)starting
    if (zsock_connect(self->data, "%s", endpoint) != 0) {
        snprintf(err, errlen, "cannot connect to broker endpoint=%s", endpoint);
        drv_feed_destroy(&self);
        return NULL;
    }
    if (ring) {
        char why[200];
        self->ring = drv_ring_create(DRV_RING_BYTES, why, sizeof why);
        if (!self->ring) {
            drv_warn("no data ring, batches come over the socket instance=%s reason=\"%s\"", instance, why);
        }
    }
    return self;
}

void drv_feed_destroy(drv_feed_t **self_p)
{
    if (self_p && *self_p) {
        drv_feed_t *self = *self_p;
        zsock_destroy(&self->data);
        drv_ring_destroy(&self->ring);
        drv_unsettled_free(&self->unsettled);
        free(self->instance);
        free(self);
        *self_p = NULL;
    }
}

//  Credit (batches the broker may send) and acknowledgements (batches
//  settled) travel apart: a batch is credited back once the DAG took it,
//  so an exporter holding records in its queue does not stop the broker
//  from feeding the others; it is acknowledged once settled
//  (schemas/control.md, `credit`). A reset offers the ring again: a broker
//  that restarted maps it anew.
static void s_send_credit(drv_feed_t *self, int64_t n, int64_t acked, bool reset, bool synced, int64_t sync_id)
{
    drv_msg_t msg;
    drv_msg_init(&msg, DRV_MSG_CREDIT);
    drv_msg_set_int(&msg, DRV_F_N, n);
    drv_msg_set_int(&msg, DRV_F_ACKED, acked);
    drv_msg_set_bool(&msg, DRV_F_RESET, reset);
    if (synced) {
        drv_msg_set_bool(&msg, DRV_F_SYNCED, true);
        if (sync_id) {
            drv_msg_set_int(&msg, DRV_F_SYNC_ID, sync_id); // which SYNC this answers: the broker waits for its last
        }
    }
    if (reset && self->ring) {
        drv_msg_set_int(&msg, DRV_F_PID, getpid());
        drv_msg_set_int(&msg, DRV_F_RING_FD, drv_ring_fd(self->ring));
        drv_msg_set_int(&msg, DRV_F_RING_BYTES, (int64_t)drv_ring_bytes(self->ring));
    }
    drv_msg_send(self->data, NULL, &msg, false);
    drv_msg_clear(&msg);
}

void drv_feed_start(drv_feed_t *self)
{
    s_send_credit(self, self->credit_window, 0, true, false, 0);
}

void *drv_feed_socket(drv_feed_t *self)
{
    return zsock_resolve(self->data);
}

bool drv_feed_sleep(drv_feed_t *self)
{
    return !self->ring || drv_ring_sleep(self->ring);
}

void drv_feed_awake(drv_feed_t *self)
{
    if (self->ring) {
        drv_ring_awake(self->ring);
    }
}

//  Every batch whose records are exported (settled) is acknowledged, in
//  order, draining or not, so the broker never redelivers what was done and
//  never forgets what was not; with it goes the credit of the batches taken.
void drv_feed_settle(drv_feed_t *self, drv_dag_t *dag)
{
    self->acked_owed += (int64_t)drv_unsettled_settle(&self->unsettled, drv_dag_settle(dag));
    if (self->credit_owed > 0 || self->acked_owed > 0) {
        s_send_credit(self, self->credit_owed, self->acked_owed, false, false, 0);
        self->credit_owed = 0;
        self->acked_owed = 0;
    }
}

static void s_batch(drv_feed_t *self, drv_dag_t *dag, const char *node, const void *payload, size_t size)
{
    char err[200];
    self->batches++;
    if (drv_dag_ingest(dag, node, payload, size, err, sizeof err) < 0) {
        //  A producer sending junk must not flood the log: once a second at
        //  most, with how many were refused meanwhile.
        self->rejected++;
        int64_t now = drv_time_mono_ms();
        if (now >= self->next_rejected_log_ms) {
            drv_warn("rejected producer message node=%s bytes=%zu reason=\"%s\" rejected_total=%lld", node, size, err,
                     (long long)self->rejected);
            self->next_rejected_log_ms = now + 1000;
        }
    }
    drv_unsettled_push(&self->unsettled, drv_dag_input(dag)); // junk too: it settles at once
    self->credit_owed++;                                      // taken: the broker may send another
    if (self->credit_owed >= (self->credit_window + 1) / 2) {
        //  Half the window taken in one round: the broker would otherwise
        //  wait for the round's end with nothing to send (the ring empties
        //  faster than a socket did).
        s_send_credit(self, self->credit_owed, 0, false, false, 0);
        self->credit_owed = 0;
    }
}

//  A broker that has not seen our credit (it restarted, or our first credit
//  crossed its SYNC). Acknowledge what we exported, then state the window:
//  what it sent after the SYNC is still in flight to us, and it counts that
//  against the window. Batches still being exported came from a broker
//  that is gone, or from this one before a send to us failed (it
//  redelivers those): nobody is left to acknowledge them to.
static void s_sync(drv_feed_t *self, drv_dag_t *dag, int64_t sync_id)
{
    drv_feed_settle(self, dag);
    if (drv_unsettled_count(&self->unsettled) > 0) {
        drv_info("batches of the previous broker still exporting instance=%s batches=%zu", self->instance,
                 drv_unsettled_count(&self->unsettled));
        drv_unsettled_forget(&self->unsettled);
    }
    self->credit_owed = 0; // the window below counts what is taken from now on
    s_send_credit(self, self->credit_window, 0, true, true, sync_id);
}

//  One message from the broker: its header, and the payload that follows a
//  batch's (NULL when none came). True when it was a batch.
static bool s_message(drv_feed_t *self, drv_dag_t *dag, const void *header, size_t header_len, const void *payload,
                      size_t payload_len, bool *marker)
{
    drv_msg_t msg;
    char err[200];
    if (drv_msg_decode(&msg, header, header_len, err, sizeof err) != 0) {
        drv_warn("malformed data header from broker reason=\"%s\"", err);
        return false;
    }
    bool batch = msg.type == DRV_MSG_BATCH;
    if (batch && !payload) {
        drv_warn("batch without payload node=%s", msg.node);
    } else if (batch) {
        s_batch(self, dag, msg.node, payload, payload_len);
    } else if (msg.type == DRV_MSG_DRAIN) {
        *marker = true;
    } else if (msg.type == DRV_MSG_SYNC) {
        s_sync(self, dag, drv_msg_has(&msg, DRV_F_SYNC_ID) ? msg.sync_id : 0);
    } // RING: the doorbell; the ring is read anyway
    drv_msg_clear(&msg);
    return batch;
}

//  Up to max entries from the ring, in order: how many, or -1 when the
//  ring is not what a broker writes.
static int s_take_ring(drv_feed_t *self, drv_dag_t *dag, int max, bool *marker)
{
    int taken = 0;
    while (self->ring && taken < max) {
        const void *header, *payload;
        size_t header_len, payload_len;
        int rc = drv_ring_peek(self->ring, &header, &header_len, &payload, &payload_len);
        if (rc < 0) {
            drv_error("the data ring is corrupt instance=%s: stopping, the broker redelivers what is unacknowledged",
                      self->instance);
            return -1;
        }
        if (rc == 0) {
            break;
        }
        s_message(self, dag, header, header_len, payload, payload_len, marker);
        drv_ring_release(self->ring);
        taken++;
    }
    return taken;
}

//  Receives one message from the socket as a zmsg; NULL when nothing is ready.
static zmsg_t *s_recv_nowait(zsock_t *sock)
{
    zmq_pollitem_t item = {zsock_resolve(sock), 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, 0) <= 0) {
        return NULL;
    }
    return zmsg_recv(sock);
}

int drv_feed_take(drv_feed_t *self, drv_dag_t *dag, bool *marker)
{
    for (int round = 0; round < BATCHES_PER_ROUND;) {
        int taken = s_take_ring(self, dag, BATCHES_PER_ROUND - round, marker);
        if (taken < 0) {
            return -1;
        }
        round += taken;
        if (round >= BATCHES_PER_ROUND) {
            break;
        }
        zmsg_t *zmsg = s_recv_nowait(self->data);
        if (!zmsg) {
            break;
        }
        //  What the broker put in the ring before it sent this comes first.
        if (s_take_ring(self, dag, INT32_MAX, marker) < 0) {
            zmsg_destroy(&zmsg);
            return -1;
        }
        zframe_t *header = zmsg_first(zmsg);
        zframe_t *payload = zmsg_next(zmsg);
        if (!header) {
            drv_warn("empty message from broker");
        } else if (s_message(self, dag, zframe_data(header), zframe_size(header), payload ? zframe_data(payload) : NULL,
                             payload ? zframe_size(payload) : 0, marker) &&
                   self->ring) {
            drv_ring_count_socket_batch(self->ring); // the broker waits for it before it writes to the ring again
        }
        zmsg_destroy(&zmsg);
        round++;
    }
    drv_feed_settle(self, dag);
    return 0;
}

void drv_feed_drained(drv_feed_t *self, drv_dag_t *dag)
{
    drv_msg_t drained;
    drv_msg_init(&drained, DRV_MSG_DRAINED);
    drv_msg_set_str(&drained, DRV_F_INSTANCE, self->instance);
    int64_t in, out, errors;
    drv_dag_counters(dag, &in, &out, &errors);
    drv_msg_set_int(&drained, DRV_F_RECORDS_IN, in);
    drv_msg_set_int(&drained, DRV_F_RECORDS_OUT, out);
    drv_msg_set_int(&drained, DRV_F_ERRORS, errors);
    drv_msg_send(self->data, NULL, &drained, false);
    drv_msg_clear(&drained);
}

int64_t drv_feed_batches(const drv_feed_t *self)
{
    return self->batches;
}
