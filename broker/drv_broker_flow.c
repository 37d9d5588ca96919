/*  drv_broker_flow — batches from front doors to instances, credit and acks
    back, and redelivery of what an instance will never acknowledge. */
#include "drv_broker_core.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <string.h>

void drv_broker_send_marker(drv_broker_t *self, drv_instance_t *inst)
{
    drv_msg_t msg;
    drv_msg_init(&msg, DRV_MSG_DRAIN);
    if (drv_msg_send(self->backend, inst->id, &msg, true) != 0) {
        //  Not connected yet (it may be reconnecting to us): retry until it is,
        //  or until droverd's drain deadline gives up on it.
        if (!inst->marker_pending) {
            drv_warn("drain marker undeliverable, retrying instance=%s reason=\"%s\"", inst->id,
                     zmq_strerror(zmq_errno()));
        }
        inst->marker_pending = true;
        inst->next_marker_ms = drv_time_mono_ms() + SYNC_RETRY_MS;
    } else {
        drv_info("drain marker sent instance=%s", inst->id);
        inst->marker_pending = false;
    }
    drv_msg_clear(&msg);
    inst->drain_pending = false;
}

//  Into the instance's data ring (docs/architecture.md, "The data ring"):
//  1 put there, 0 not now (the ring is full, or a batch sent over the
//  socket is not taken yet: the ring would overtake it), -1 too large for
//  the ring (it goes over the socket once the ring is empty).
static int s_put_ring(drv_broker_t *self, drv_instance_t *inst, drv_route_t *route, zmq_msg_t *payload)
{
    if (drv_ring_socket_batches(inst->ring) < inst->socket_taken_at) {
        return 0;
    }
    if (inst->ring_wants_empty && !drv_ring_empty(inst->ring)) {
        return 0; // a batch too large for it waits (parked) until it is empty, and goes first then
    }
    bool wake = false;
    int rc = drv_ring_put(inst->ring, zframe_data(route->header), zframe_size(route->header), zmq_msg_data(payload),
                          zmq_msg_size(payload), &wake);
    if (rc == -2) { // the instance wrote what no instance writes: its batches go over the socket from now on
        drv_error("data ring refused, batches go over the socket instance=%s reason=\"its tail is out of bounds\"",
                  inst->id);
        drv_ring_destroy(&inst->ring);
        inst->ring_wants_empty = false;
        return -1;
    }
    if (rc == -1) {
        inst->ring_wants_empty = !drv_ring_empty(inst->ring);
        return inst->ring_wants_empty ? 0 : -1;
    }
    if (rc == 1 && wake) { // it sleeps in its poll: the doorbell (if it cannot be sent, its next poll looks)
        drv_msg_t bell;
        drv_msg_init(&bell, DRV_MSG_RING);
        drv_msg_send(self->backend, inst->id, &bell, true);
        drv_msg_clear(&bell);
    }
    return rc == 1 ? 1 : 0;
}

//  Sends one batch to an instance, through its data ring or over the
//  socket, and keeps it in the ledger until acknowledged. The kept copy
//  shares the payload's bytes. Returns 0, -1 when the instance is gone, -2
//  when its ring cannot take it now (nothing was sent either way).
static int s_send_batch(drv_broker_t *self, drv_instance_t *inst, drv_route_t *route, zmq_msg_t *payload,
                        const drv_pending_t *ack_from)
{
    int ring = inst->ring ? s_put_ring(self, inst, route, payload) : -1;
    if (ring == 0) {
        inst->ring_blocked = true; // until it takes something and says so
        return -2;
    }
    drv_pending_t *pending = drv_pending_new(route, payload, ack_from);
    if (ring == -1) {
        void *backend = zsock_resolve(self->backend);
        int rc = zmq_send(backend, inst->id, strlen(inst->id), ZMQ_SNDMORE | ZMQ_DONTWAIT);
        if (rc >= 0) {
            rc = zmq_send(backend, zframe_data(route->header), zframe_size(route->header), ZMQ_SNDMORE);
        }
        if (rc >= 0) {
            rc = zmq_msg_send(payload, backend, 0);
        }
        if (rc < 0) {
            drv_pending_destroy(&pending);
            return -1;
        }
        inst->socket_taken_at += inst->ring != NULL;
    }
    drv_ledger_sent(self->ledger, inst->id, &pending);
    inst->credit--;
    inst->sent_since_sync++;
    self->forwarded++;
    return 0;
}

//  True when the front door may be read: an instance can take a batch and
//  the front door holds less than its buffer limit (else its producers are
//  held back in their own queues, never buffered here).
bool drv_broker_readable(drv_broker_t *self, const drv_front_door_t *fe)
{
    return fe->route->held_bytes < self->front_door_buffer_bytes &&
           drv_instances_serving(self->instances, fe->pipeline, fe->node);
}

//  Gives a message to the next instance that takes it, or parks it in the
//  ledger for the next one that can (nothing is dropped).
static void s_dispatch(drv_broker_t *self, drv_front_door_t *fe, drv_instance_t *inst, zmq_msg_t *payload,
                       const drv_pending_t *ack_from)
{
    int rc;
    while (inst && (rc = s_send_batch(self, inst, fe->route, payload, ack_from)) != 0) {
        if (rc == -1) {
            //  It vanished between credit and send: stop routing to it and
            //  give this same message to the next one.
            drv_warn("instance unreachable, removed from routing instance=%s reason=\"%s\"", inst->id,
                     zmq_strerror(zmq_errno()));
            drv_instance_unroute(inst);
        }
        inst = drv_instances_pick(self->instances, fe->pipeline, fe->node);
    }
    if (!inst) {
        drv_pending_t *pending = drv_pending_new(fe->route, payload, ack_from);
        drv_ledger_park(self->ledger, &pending);
    }
}

//  Moves up to FORWARD_PER_ROUND messages from one front door to instances
//  (zero-copy: the producer's frame travels on as the batch payload).
//  Returns true when its queue ran dry.
bool drv_broker_forward(drv_broker_t *self, drv_front_door_t *fe)
{
    for (int moved = 0; moved < FORWARD_PER_ROUND;) {
        drv_instance_t *inst = drv_instances_pick(self->instances, fe->pipeline, fe->node);
        if (!inst) {
            return false;
        }
        zmq_msg_t payload;
        drv_pending_t from = {0};
        int rc = drv_front_door_recv(fe, &self->refusals, &payload, &from);
        if (rc == -1) {
            drv_instances_unpick(self->instances);
            continue; // refused, answered and counted
        }
        if (rc != 1) {
            //  Nothing came: whoever was picked keeps its turn. (Else, with
            //  one batch per wake-up, the same instance of two would get them all.)
            drv_instances_unpick(self->instances);
            return rc == 0;
        }
        s_dispatch(self, fe, inst, &payload, fe->ack ? &from : NULL);
        zmq_msg_close(&payload);
        drv_front_door_from_clear(&from);
        fe->batches++;
        moved++;
    }
    return false;
}

//  What an instance will never acknowledge goes to the redelivery queue.
void drv_broker_orphan(drv_broker_t *self, drv_instance_t *inst, const char *why)
{
    size_t moved = drv_ledger_orphan(self->ledger, inst->id);
    if (moved > 0) {
        drv_warn("redelivering unacknowledged batches instance=%s batches=%zu reason=\"%s\"", inst->id, moved, why);
    }
}

static drv_front_door_t *s_front_door_by_endpoint(drv_broker_t *self, const char *endpoint)
{
    for (drv_front_door_t *fe = zlistx_first(self->front_doors); fe; fe = zlistx_next(self->front_doors)) {
        if (!strcmp(fe->endpoint, endpoint)) {
            return fe;
        }
    }
    return NULL;
}

//  An acknowledged batch of an ack-mode producer: answer it.
static void s_acked(const drv_pending_t *done, void *arg)
{
    drv_front_door_t *fe = done->reply_to ? s_front_door_by_endpoint(arg, done->route->endpoint) : NULL;
    if (fe) {
        drv_front_door_answer(fe, done->reply_to, done->msg_id, NULL);
    }
}

//  A credit with reset offers the instance's data ring (or none): mapped
//  unless it is the one already mapped. A new ring starts with nothing
//  sent over the socket (a new process, or a broker new to it: it has
//  taken everything sent before its answer).
static void s_offer_ring(drv_instance_t *inst, const drv_msg_t *msg)
{
    bool offered = drv_msg_has(msg, DRV_F_RING_FD) && drv_msg_has(msg, DRV_F_PID);
    if (inst->ring && offered && inst->ring_pid == (pid_t)msg->pid && inst->ring_fd == (int)msg->ring_fd) {
        return;
    }
    drv_ring_destroy(&inst->ring);
    inst->ring_blocked = false;
    if (!offered) {
        return;
    }
    char err[300];
    inst->ring = drv_ring_attach((pid_t)msg->pid, (int)msg->ring_fd, err, sizeof err);
    if (!inst->ring) {
        drv_warn("data ring not mapped, batches go over the socket instance=%s reason=\"%s\"", inst->id, err);
        return;
    }
    inst->ring_pid = (pid_t)msg->pid;
    inst->ring_fd = (int)msg->ring_fd;
    inst->socket_taken_at = drv_ring_socket_batches(inst->ring);
    drv_info("data ring mapped instance=%s bytes=%zu", inst->id, drv_ring_bytes(inst->ring));
}

void drv_broker_handle_backend(drv_broker_t *self)
{
    zmsg_t *zmsg = zmsg_recv(self->backend);
    if (!zmsg) {
        return;
    }
    char *identity = zmsg_popstr(zmsg);
    zframe_t *body = zmsg_first(zmsg);
    drv_msg_t msg;
    char err[200];
    if (identity && body && drv_msg_decode(&msg, zframe_data(body), zframe_size(body), err, sizeof err) == 0) {
        if (msg.type == DRV_MSG_DRAINED) {
            //  After its last ack, on the same pipe: nothing it got is unexported.
            drv_ledger_drained(self->ledger, identity);
        } else if (msg.type == DRV_MSG_CREDIT) {
            drv_instance_t *inst = drv_instances_get(self->instances, identity);
            if (msg.reset && !msg.synced) {
                //  A new process behind this id: nothing sent before can be
                //  acknowledged any more.
                drv_broker_orphan(self, inst, "new incarnation");
                inst->resync = false;
            } else if (msg.synced && inst->resync) {
                //  Its answer to the SYNC after a failed send: it forgot what
                //  it held from us (all sent before it was unrouted), so
                //  another instance, or it, gets those again.
                drv_broker_orphan(self, inst, "resynchronized after a failed send");
                inst->resync = false;
            } else if (!msg.synced) {
                //  The batches exported: acknowledged. (A worker that sends
                //  no `acked` returns credit only as it exports.)
                drv_ledger_acked(self->ledger, identity, drv_msg_has(&msg, DRV_F_ACKED) ? msg.acked : msg.n, s_acked,
                                 self);
            }
            if (msg.reset) {
                s_offer_ring(inst, &msg);
            }
            //  It took something: try its ring again (or, for a batch too
            //  large for it, once it is empty).
            inst->ring_wants_empty = inst->ring_wants_empty && inst->ring && !drv_ring_empty(inst->ring);
            inst->ring_blocked = inst->ring_wants_empty;
            bool known = inst->credit_known;
            drv_instance_credit(inst, msg.n, msg.reset, msg.synced, drv_msg_has(&msg, DRV_F_SYNC_ID) ? msg.sync_id : 0,
                                inst->sent_since_sync);
            if (!known && inst->credit_known) {
                drv_info("instance connected instance=%s credit=%lld", inst->id, (long long)inst->credit);
            }
            drv_broker_redeliver(self); // parked batches before the front doors' next: one may wait for a ring
        }
        drv_msg_clear(&msg);
    } else {
        drv_warn("malformed message on backend from=%s", identity ? identity : "?");
    }
    free(identity);
    zmsg_destroy(&zmsg);
}

//  Offers a parked batch to a live instance of its pipeline with credit.
static int s_redeliver_one(drv_pending_t *pending, void *arg)
{
    drv_broker_t *self = arg;
    drv_instance_t *inst = drv_instances_pick(self->instances, pending->route->pipeline, pending->route->node);
    if (!inst) {
        return 0;
    }
    int rc = s_send_batch(self, inst, pending->route, &pending->payload, pending);
    if (rc == -2) {
        return 0; // its ring is full: the next in line may go elsewhere
    }
    if (rc != 0) {
        drv_warn("instance unreachable, removed from routing instance=%s reason=\"%s\"", inst->id,
                 zmq_strerror(zmq_errno()));
        drv_instance_unroute(inst);
        return -1;
    }
    return 1;
}

void drv_broker_redeliver(drv_broker_t *self)
{
    drv_ledger_redeliver(self->ledger, s_redeliver_one, self);
}
