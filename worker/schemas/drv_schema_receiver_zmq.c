/*  receiver:zmq's schema (worker/nodes/drv_receiver_zmq.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"

const drv_node_schema_t drv_schema_receiver_zmq = {
    .name = "receiver:zmq",
    .role = DRV_ROLE_RECEIVER,
    .doc = "Producers send msgpack records (a map, or an array of maps) over ZeroMQ to an endpoint "
           "the broker binds; it spreads them over the pipeline's instances by credit and keeps the "
           "front door open while instances change (schemas/ingest.md).",
    .example = "{type: receiver:zmq, config: {endpoint: \"tcp://127.0.0.1:5555\"}, to: [out]}",
    .keys = {{.key = "endpoint",
              .kind = DRV_KEY_ENDPOINT,
              .required = true,
              .doc = "where the broker binds: tcp://host:port or ipc://path (confined to engine.data_dirs); "
                     "one pipeline's per engine"},
             {.key = "ack",
              .kind = DRV_KEY_BOOL,
              .fallback = "false",
              .doc = "false: PUSH producers, fire and forget; true: DEALER producers get an ack per message "
                     "once its records are exported (or durable in a disk buffer)"}},
};
