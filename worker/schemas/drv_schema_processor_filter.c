/*  processor:filter's schema (worker/nodes/drv_processor_filter.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    drv_condition_check(check, node_path, "config", config, true);
}

const drv_node_schema_t drv_schema_processor_filter = {
    .name = "processor:filter",
    .role = DRV_ROLE_PROCESSOR,
    .doc = "Hands on the records whose field compares true with value; the others are counted as "
           "dropped.",
    .example = "{type: processor:filter, config: {field: level, op: ge, value: 3}, to: [out]}",
    .keys = {{.key = "field", .kind = DRV_KEY_STRING, .required = true, .doc = "the top-level field compared"},
             {.key = "op",
              .kind = DRV_KEY_CHOICE,
              .required = true,
              .choices = DRV_CONDITION_OPS,
              .doc = "how: eq ne lt le gt ge, or exists"},
             {.key = "value",
              .kind = DRV_KEY_ANY,
              .doc = "what field is compared with (required unless op is exists)"}},
    .check = s_check,
};
