/*  drv_broker — the data-plane front door. Binds every receiver:zmq endpoint,
    so producers stay connected across worker generations, and spreads their
    messages over each pipeline's routable instances by credit. */
#ifndef DRV_BROKER_H
#define DRV_BROKER_H

#include <stdint.h>

#define DRV_BROKER_EXIT_OK 0
#define DRV_BROKER_EXIT_USAGE 100
#define DRV_BROKER_EXIT_SYSTEM 111

//  max_message_bytes: larger producer messages are refused (ack mode: answered
//  with an error; otherwise dropped, logged and counted).
typedef struct {
    int64_t max_message_bytes;       // engine.limits.max_message_bytes
    int64_t front_door_buffer_bytes; // engine.limits.front_door_buffer_bytes
    int64_t heartbeat_ms;            // engine.heartbeat_interval_ms: how fresh droverd's forwarded count is
} drv_broker_options_t;

int drv_broker_run(const char *control_endpoint, const char *data_endpoint, const drv_broker_options_t *options);

#endif
