/*  drv_ledger — the broker's delivery ledger: what was sent to which instance
    and is not yet acknowledged, and what waits for another instance because
    the one it went to will never acknowledge it.

    What must stay true (tests/unit/test_ledger.c):
    - a batch leaves the ledger only when its instance acknowledges it, when
      that instance drained cleanly, or when another instance took it over;
    - acknowledgements release batches oldest first, exactly as many as acked;
    - an instance that exits or restarts hands every unacknowledged batch to
      the redelivery queue, oldest first; one that drained cleanly hands none;
    - a route's held_bytes is the payload of its batches still in the ledger,
      so a front door can stop reading when its producers are too far ahead. */
#ifndef DRV_LEDGER_H
#define DRV_LEDGER_H

#include <czmq.h>
#include <stdbool.h>
#include <stdint.h>

//  Where batches came from: shared (refcounted) by a front door and every
//  batch of it still kept, so keeping a batch costs no string copies.
typedef struct {
    int refs;
    char *pipeline;     // "group:pipeline"
    char *node;         // receiver node the batches came in on
    char *endpoint;     // the front door, to answer ack-mode producers through
    zframe_t *header;   // the BATCH header for that node, encoded once
    int64_t held_bytes; // payload bytes of its batches kept until acknowledged
} drv_route_t;

drv_route_t *drv_route_new(const char *pipeline, const char *node, const char *endpoint, const zframe_t *header);
drv_route_t *drv_route_ref(drv_route_t *route);
void drv_route_unref(drv_route_t **route_p);

//  One batch kept until acknowledged: a refcounted zmq message, not a copy of
//  the bytes. In ack mode it also knows the producer to answer.
typedef struct {
    drv_route_t *route; // one reference held
    zmq_msg_t payload;  // the producer's message (empty once sent from this copy)
    zframe_t *reply_to; // ack mode: the producer's routing id, else NULL
    zframe_t *msg_id;   // ack mode: the producer's message id
    int64_t held;       // bytes counted in route->held_bytes
} drv_pending_t;

//  A pending batch of `route` sharing `payload`'s bytes (zmq_msg_copy), with
//  the producer of `ack_from` (may be NULL), counted in the route's held bytes.
drv_pending_t *drv_pending_new(drv_route_t *route, zmq_msg_t *payload, const drv_pending_t *ack_from);
void drv_pending_destroy(drv_pending_t **pending_p);

typedef struct drv_ledger_t drv_ledger_t;

drv_ledger_t *drv_ledger_new(void);
void drv_ledger_destroy(drv_ledger_t **self_p);

//  `id` starts (or restarts) receiving: a fresh incarnation, not drained.
void drv_ledger_open(drv_ledger_t *self, const char *id);
//  Takes ownership of a batch just sent to instance `id`.
void drv_ledger_sent(drv_ledger_t *self, const char *id, drv_pending_t **pending_p);
//  Batches sent to `id` and not yet acknowledged.
size_t drv_ledger_unacked(drv_ledger_t *self, const char *id);

//  Called for each acknowledged batch before it is released (to answer its
//  producer in ack mode).
typedef void(drv_ledger_done_fn)(const drv_pending_t *pending, void *arg);
//  `id` exported `count` more batches: the oldest `count` are released.
void drv_ledger_acked(drv_ledger_t *self, const char *id, int64_t count, drv_ledger_done_fn *done, void *arg);
//  `id` said DRAINED after its last ack: everything it got is exported.
void drv_ledger_drained(drv_ledger_t *self, const char *id);
//  `id` will never acknowledge what it has (it exited, or a new process took
//  its id): its batches go to the redelivery queue unless it drained cleanly.
//  Returns how many moved.
size_t drv_ledger_orphan(drv_ledger_t *self, const char *id);
//  Forgets `id` after orphaning what it held.
void drv_ledger_forget(drv_ledger_t *self, const char *id);

//  Keeps a batch nobody could take now, for the next instance that can.
void drv_ledger_park(drv_ledger_t *self, drv_pending_t **pending_p);
//  Batches waiting in the redelivery queue.
size_t drv_ledger_parked(drv_ledger_t *self);

//  Offers a parked batch for delivery: 1 taken (the ledger frees its copy),
//  0 no instance for its route now (it stays, the next is offered), -1 the
//  send failed (it stays first in line; redelivery stops for this turn).
typedef int(drv_ledger_deliver_fn)(drv_pending_t *pending, void *arg);
//  Offers the parked batches oldest first. Returns how many were taken.
size_t drv_ledger_redeliver(drv_ledger_t *self, drv_ledger_deliver_fn *deliver, void *arg);

#endif
