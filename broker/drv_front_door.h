/*  drv_front_door — one bound receiver:zmq endpoint of a pipeline. Producers
    stay connected to it across worker generations. A PULL socket, or a ROUTER
    in ack mode, where each message is [producer][message id][payload] and is
    answered {ok} once exported, or {ok: false, error} when refused. */
#ifndef DRV_FRONT_DOOR_H
#define DRV_FRONT_DOOR_H

#include "drv_ledger.h"

#include <czmq.h>
#include <stdbool.h>
#include <stdint.h>

//  Producer messages refused for their size, shared by every front door:
//  logged at most once a second with the running total.
typedef struct {
    int64_t total;       // refused since start (drover_broker_refused_messages_total)
    int64_t next_log_ms; // when the next refusal may be logged
} drv_refusals_t;

typedef struct {
    char *pipeline;            // "group:pipeline"
    char *node;                // receiver node id
    char *endpoint;            // what is bound
    bool ack;                  // ROUTER: producers get an answer per message
    zsock_t *sock;             // PULL, or ROUTER in ack mode
    drv_route_t *route;        // shared with the batches still kept in the ledger
    int64_t max_message_bytes; // larger producer messages are refused
    int64_t batches;           // messages accepted
    bool closing;              // unbound; forwarding what is queued
    int64_t close_deadline_ms;
} drv_front_door_t;

//  Binds `endpoint` for (pipeline, node). Returns NULL with `reason` filled
//  when it cannot (an ipc:// path that exists and is not a socket is left
//  alone: binding would unlink it). The receive high-water mark follows from
//  the byte budget: as many messages of the largest size as it holds.
drv_front_door_t *drv_front_door_new(const char *pipeline, const char *node, const char *endpoint, bool ack,
                                     int64_t max_message_bytes, int64_t buffer_bytes, char *reason, size_t reason_len);
void drv_front_door_destroy(drv_front_door_t **self_p);

//  Unbinds; what is queued may still be read until the flush deadline.
void drv_front_door_close(drv_front_door_t *self, int64_t flush_ms);

//  Reads one producer message without waiting. Returns 1 with `payload` set
//  (in ack mode `from` holds the producer to answer; clear it with
//  drv_front_door_from_clear), 0 when nothing is queued, -1 when a message was
//  refused (answered in ack mode, counted in `refusals`): call again, -2 when
//  interrupted (not empty: try again on the next turn).
int drv_front_door_recv(drv_front_door_t *self, drv_refusals_t *refusals, zmq_msg_t *payload, drv_pending_t *from);
void drv_front_door_from_clear(drv_pending_t *from);

//  Answers an ack-mode producer: {ok: true}, or {ok: false, error}.
void drv_front_door_answer(drv_front_door_t *self, const zframe_t *reply_to, const zframe_t *msg_id, const char *error);

#endif
