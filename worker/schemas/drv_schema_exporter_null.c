/*  exporter:null's schema (worker/nodes/drv_exporter_null.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"

const drv_node_schema_t drv_schema_exporter_null = {
    .name = "exporter:null",
    .role = DRV_ROLE_EXPORTER,
    .doc = "Takes every record and keeps none: counts them as exported.",
    .keys = {DRV_QUEUE_KEY},
    .example = "{type: exporter:null}",
    .check = drv_queue_check,
};
