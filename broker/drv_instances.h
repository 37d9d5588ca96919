/*  drv_instances — the broker's view of pipeline instances: which may be
    routed to, how much credit each has granted, and the timers of the
    messages it still owes them (SYNC, the DRAIN marker). Picks the next
    instance for a batch round-robin among those with credit. */
#ifndef DRV_INSTANCES_H
#define DRV_INSTANCES_H

#include "drover/drv_ring.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

//  SYNC is sent again this often until a pipe to the instance takes it,
//  and again when one it took is not answered within SYNC_ANSWER_MS.
#define SYNC_RETRY_MS 100
#define SYNC_ANSWER_MS 1000

typedef struct {
    char *id;                // instance id, also its routing id on the backend
    char *pipeline;          // "group:pipeline"; NULL until INSTANCE_ADD names it
    json_t *nodes;           // its receiver:zmq node ids, or NULL for any
    int64_t credit;          // batches we may still send it
    int64_t sent_since_sync; // batches sent since the last SYNC: its answer's window already covers them
    bool credit_known;       // it has granted credit to this broker
    bool routable;           // added and not draining
    bool unreachable;        // unrouted because a send to it failed: its answer to SYNC routes it again
    bool resync;             // unrouted by a failed send: what it holds from us is redelivered when it answers
    bool drain_pending;      // drain asked; marker waits for closing front doors
    bool marker_pending;     // marker could not be delivered yet (not connected); retried
    int64_t deleted_at_ms;   // droverd said it is gone (0: not yet)
    int64_t next_sync_ms;    // when to send SYNC again while it has granted no credit
    int64_t sync_serial;     // the number of the last SYNC sent to it
    int64_t sync_awaited;    // the SYNC it took and has not answered (0: none): nothing is sent to it meanwhile
    int64_t next_marker_ms;  // when to retry an undelivered DRAIN marker
    drv_ring_t *ring;        // its data ring, mapped (NULL: batches go over the socket)
    pid_t ring_pid;          // the process and descriptor it was offered as
    int ring_fd;
    uint64_t socket_taken_at; // what the ring's count of batches taken from the socket must reach
                              // before the ring is written again (one more per batch sent over the socket)
    bool ring_blocked;        // the ring could not take a batch: not picked until its next credit
    bool ring_wants_empty;    // a batch too large for the ring waits for it to empty: nothing else goes in
} drv_instance_t;

typedef struct drv_instances_t drv_instances_t;

drv_instances_t *drv_instances_new(void);
void drv_instances_destroy(drv_instances_t **self_p);

//  The instance with this id, created (not routable, no credit) if unknown.
drv_instance_t *drv_instances_get(drv_instances_t *self, const char *id);
//  The instance with this id, or NULL.
drv_instance_t *drv_instances_lookup(drv_instances_t *self, const char *id);
void drv_instances_delete(drv_instances_t *self, const char *id);
//  Iteration (not safe across delete).
drv_instance_t *drv_instances_first(drv_instances_t *self);
drv_instance_t *drv_instances_next(drv_instances_t *self);

//  INSTANCE_ADD: route (pipeline, receiver nodes or NULL for all) to it.
void drv_instance_route(drv_instance_t *inst, const char *pipeline, json_t *nodes);
//  A send to it failed: stops routing to it and forgets its credit, and
//  asks it (SYNC, until that gets through) to state its window again.
void drv_instance_unroute(drv_instance_t *inst);
//  True when it should be sent a SYNC now: routed, or unrouted by a failed
//  send, no credit from it since, and no SYNC it took waiting for its
//  answer (but one unanswered for a second, in case a reconnect lost it).
bool drv_instance_wants_sync(const drv_instance_t *inst, int64_t now_ms);
//  SYNC number `id` went out now (`taken`: its pipe took it).
void drv_instance_sync_sent(drv_instance_t *inst, int64_t id, bool taken, int64_t now_ms);
//  A CREDIT message: `reset` (a new process: its window is `count`),
//  `synced` (the answer to our SYNC numbered `sync_id`, 0 when it names
//  none: `in_flight` batches, sent since the SYNC, already use the window)
//  or else `count` batches returned as credit. While a SYNC it took is
//  unanswered, only the answer to that one sets its credit: batches written
//  to its data ring meanwhile could reach it before the SYNC does, and its
//  answer would count them as in flight for good (docs/architecture.md).
void drv_instance_credit(drv_instance_t *inst, int64_t count, bool reset, bool synced, int64_t sync_id,
                         int64_t in_flight);
//  True when it can take a batch of this pipeline's receiver node now.
bool drv_instance_serves(const drv_instance_t *inst, const char *pipeline, const char *node);

//  The next instance, round-robin, that can take a batch of (pipeline, node).
drv_instance_t *drv_instances_pick(drv_instances_t *self, const char *pipeline, const char *node);
//  The last pick was not used (nothing to send): the next pick starts where
//  it did, so an empty read does not skip an instance's turn.
void drv_instances_unpick(drv_instances_t *self);
//  True when some instance can take a batch of (pipeline, node).
bool drv_instances_serving(drv_instances_t *self, const char *pipeline, const char *node);

#endif
