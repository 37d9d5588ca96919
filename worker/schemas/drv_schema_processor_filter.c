/*  processor:filter's schema (worker/nodes/drv_processor_filter.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"

#include <stdio.h>

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    json_t *conditions = json_object_get(config, "conditions");
    if (!conditions) {
        json_t *old = json_deep_copy(config);
        json_object_del(old, "error_mode");
        drv_condition_check(check, node_path, "config", old, false);
        json_decref(old);
        return;
    }
    if (json_object_get(config, "field") || json_object_get(config, "op") || json_object_get(config, "value")) {
        char path[300];
        snprintf(path, sizeof path, "%s.config", node_path);
        drv_spec_check_problem(check, path, "conditions (OTTL) or field, op and value, not both");
    }
    drv_ottl_check(check, node_path, "config.conditions", conditions, false);
}

const drv_node_schema_t drv_schema_processor_filter = {
    .name = "processor:filter",
    .role = DRV_ROLE_PROCESSOR,
    .doc = "Drops the records that meet any of its OTTL conditions, as the Collector's filter processor does "
           "(docs/ottl.md); or, given field, op and value, hands on the records whose field compares true. "
           "What it drops is counted as dropped.",
    .example = "{type: processor:filter, config: {conditions: ['severity_number < SEVERITY_NUMBER_INFO']}, to: [out]}",
    .keys = {{.key = "conditions",
              .kind = DRV_KEY_ANY,
              .reference = drv_ottl_reference,
              .doc = "OTTL conditions (strings): a record meeting any is dropped (the language: processor:transform)"},
             {.key = "error_mode",
              .kind = DRV_KEY_CHOICE,
              .choices = "propagate ignore silent",
              .doc = "a condition that cannot be evaluated: propagate (the record counted in errors, handed on), "
                     "ignore (the condition skipped, counted), silent (skipped, not counted)"},
             {.key = "field", .kind = DRV_KEY_STRING, .doc = "the field compared (without conditions)"},
             {.key = "op",
              .kind = DRV_KEY_CHOICE,
              .choices = DRV_CONDITION_OPS,
              .doc = "how: eq ne lt le gt ge, or exists"},
             {.key = "value",
              .kind = DRV_KEY_ANY,
              .doc = "what field is compared with (required unless op is exists)"}},
    .check = s_check,
};
