/*  drv_broker_core — what the broker's three files share: the broker's state
    and the calls between its loop (drv_broker.c), the flow of batches and
    acks (drv_broker_flow.c) and droverd's control messages
    (drv_broker_control.c). Private to broker/. */
#ifndef DRV_BROKER_CORE_H
#define DRV_BROKER_CORE_H

#include "drv_front_door.h"
#include "drv_instances.h"
#include "drv_ledger.h"

#include "drover/drv_msg_send.h"

#include <czmq.h>
#include <stdbool.h>
#include <stdint.h>

#define FORWARD_PER_ROUND 256
#define CLOSE_FLUSH_MS 200
//  After droverd says an instance is gone, acks it sent just before exiting may
//  still be on their way: wait this long before redelivering what is unacked.
#define ACK_GRACE_MS 100

typedef struct drv_broker_t {
    zsock_t *control;                // DEALER to droverd
    zsock_t *backend;                // ROUTER to workers
    drv_instances_t *instances;      // routing and credit of each instance
    drv_ledger_t *ledger;            // what each instance owes an ack for; redelivery
    zlistx_t *front_doors;           // drv_front_door_t
    drv_refusals_t refusals;         // producer messages refused for their size
    int64_t forwarded;               // batches forwarded in total
    int64_t max_message_bytes;       // larger producer messages are refused
    int64_t front_door_buffer_bytes; // a front door past this many held bytes is not read
    int64_t heartbeat_ms;            // the forwarded count to droverd (a metric; droverd watches the process itself)
    int64_t next_heartbeat_ms;
} drv_broker_t;

//  drv_broker_flow.c: batches out, acks and credit back.
//  Sends the DRAIN marker after the instance's last batch (retried until it
//  connects).
void drv_broker_send_marker(drv_broker_t *self, drv_instance_t *inst);
//  True when the front door may be read (see drv_broker_flow.c).
bool drv_broker_readable(drv_broker_t *self, const drv_front_door_t *fe);
//  Moves queued producer messages to instances; true when the queue ran dry.
bool drv_broker_forward(drv_broker_t *self, drv_front_door_t *fe);
//  What an instance will never acknowledge goes to the redelivery queue.
void drv_broker_orphan(drv_broker_t *self, drv_instance_t *inst, const char *why);
//  Offers the redelivery queue to instances with credit.
void drv_broker_redeliver(drv_broker_t *self);
//  One message from an instance: CREDIT (acks) or DRAINED.
void drv_broker_handle_backend(drv_broker_t *self);

//  drv_broker_control.c: one message from droverd.
void drv_broker_handle_control(drv_broker_t *self);
//  True when a front door of `pipeline` (of any, when NULL) is closing.
bool drv_broker_closing(drv_broker_t *self, const char *pipeline);

#endif
