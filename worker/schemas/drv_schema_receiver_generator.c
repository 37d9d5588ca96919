/*  receiver:generator's schema (worker/nodes/drv_receiver_generator.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"

const drv_node_schema_t drv_schema_receiver_generator = {
    .name = "receiver:generator",
    .role = DRV_ROLE_RECEIVER,
    .doc = "Makes records itself: `record` plus `seq` (per instance, from 0) and `core`. For demos, "
           "load and canaries.",
    .example = "{type: receiver:generator, config: {rate: 10, record: {msg: tick}}, to: [out]}",
    .keys = {{.key = "rate",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "0",
              .maximum = DRV_LIMIT_RATE,
              .doc = "records a second per instance; 0: as fast as the exporters take them"},
             {.key = "count",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "0",
              .doc = "records per instance, then it stops; 0: no end"},
             {.key = "record", .kind = DRV_KEY_OBJECT, .fallback = "{}", .doc = "the fields of every record made"}},
};
