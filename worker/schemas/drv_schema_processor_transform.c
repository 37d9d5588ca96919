/*  processor:transform's schema (worker/nodes/drv_processor_transform.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"

const drv_node_schema_t drv_schema_processor_transform = {
    .name = "processor:transform",
    .role = DRV_ROLE_PROCESSOR,
    .doc = "Changes top-level fields: set, then rename, then delete.",
    .example = "{type: processor:transform, config: {set: {env: prod}, rename: {msg: message}, delete: "
               "[debug]}, to: [out]}",
    .keys = {{.key = "set",
              .kind = DRV_KEY_OBJECT,
              .fallback = "{}",
              .doc = "fields set on every record (replacing what is there)"},
             {.key = "rename", .kind = DRV_KEY_STRING_MAP, .fallback = "{}", .doc = "old name: new name"},
             {.key = "delete", .kind = DRV_KEY_STRING_LIST, .fallback = "[]", .doc = "fields removed"}},
};
