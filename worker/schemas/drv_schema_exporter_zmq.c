/*  exporter:zmq's schema (worker/nodes/drv_exporter_zmq.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"

const drv_node_schema_t drv_schema_exporter_zmq = {
    .name = "exporter:zmq",
    .role = DRV_ROLE_EXPORTER,
    .doc = "Sends each batch as one msgpack message to a ZeroMQ endpoint it connects to.",
    .example = "{type: exporter:zmq, config: {endpoint: \"tcp://127.0.0.1:6000\"}}",
    .keys = {{.key = "endpoint",
              .kind = DRV_KEY_ENDPOINT,
              .required = true,
              .doc = "tcp://host:port or ipc://path, connected"},
             {.key = "socket",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"push\"",
              .choices = "push pub",
              .doc = "push (held back when the consumer is slow) or pub (what a slow subscriber cannot take is "
                     "dropped)"},
             {.key = "hwm",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "100",
              .maximum = DRV_LIMIT_HWM,
              .doc = "batches queued for a slow or absent consumer"},
             DRV_QUEUE_KEY},
    .check = drv_queue_check,
};
