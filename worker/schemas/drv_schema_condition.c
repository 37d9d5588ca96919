/*  Conditions' rules (drv_schemas.h): what processor:filter and
    processor:route test records by. */
#include "drv_schemas.h"

#include "drover/drv_path.h"

#include <stdio.h>
#include <string.h>

const char *const drv_condition_ops[7] = {"eq", "ne", "lt", "le", "gt", "ge", "exists"};

void drv_condition_check(drv_spec_check_t *check, const char *node_path, const char *path, const json_t *when,
                         bool keys_checked)
{
    char where[300];
    snprintf(where, sizeof where, "%s.%s", node_path, path);
    if (!json_is_object(when)) {
        drv_spec_check_problem(check, where, "must be a map with field, op and value");
        return;
    }
    json_t *field = json_object_get(when, "field"), *op = json_object_get(when, "op");
    if (!keys_checked) {
        const char *key;
        json_t *value;
        json_object_foreach((json_t *)when, key, value)
        {
            if (strcmp(key, "field") && strcmp(key, "op") && strcmp(key, "value")) {
                drv_spec_check_problem(check, where, "unknown key \"%s\" (field, op, value)", key);
            }
        }
        char at[340];
        if (!json_is_string(field) || json_string_length(field) == 0) {
            snprintf(at, sizeof at, "%s.field", where);
            drv_spec_check_problem(check, at, "required: a non-empty string");
        }
        bool known = false;
        for (size_t i = 0; json_is_string(op) && i < sizeof drv_condition_ops / sizeof drv_condition_ops[0]; i++) {
            known = known || !strcmp(json_string_value(op), drv_condition_ops[i]);
        }
        if (!known) {
            snprintf(at, sizeof at, "%s.op", where);
            drv_spec_check_problem(check, at, "required: one of %s", DRV_CONDITION_OPS);
        }
    }
    drv_path_t parsed;
    char why[200];
    if (json_is_string(field) && json_string_length(field) > 0) { // a top-level name, or a path into maps
        if (drv_path_parse(json_string_value(field), &parsed, why, sizeof why) != 0) {
            char at[340];
            snprintf(at, sizeof at, "%s.field", where);
            drv_spec_check_problem(check, at, "not a path: %s", why);
        } else {
            drv_path_free(&parsed);
        }
    }
    bool needs_value = !(json_is_string(op) && strcmp(json_string_value(op), "exists") == 0);
    if (needs_value && !json_object_get(when, "value")) {
        char at[340];
        snprintf(at, sizeof at, "%s.value", where);
        drv_spec_check_problem(check, at, "required unless op is exists");
    }
}
