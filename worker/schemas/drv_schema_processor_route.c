/*  processor:route's schema (worker/nodes/drv_processor_route.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"

#include <stdio.h>
#include <string.h>

static void s_add_unique(json_t *list, json_t *ids)
{
    size_t i, k;
    json_t *id, *seen;
    json_array_foreach(ids, i, id)
    {
        bool known = !json_is_string(id);
        json_array_foreach(list, k, seen)
        {
            known = known || json_equal(seen, id);
        }
        if (!known) {
            json_array_append(list, id);
        }
    }
}

static json_t *s_targets(const json_t *config)
{
    json_t *list = json_array();
    size_t i;
    json_t *route;
    json_array_foreach(json_object_get(config, "routes"), i, route)
    {
        s_add_unique(list, json_object_get(route, "to"));
    }
    s_add_unique(list, json_object_get(config, "default"));
    return list;
}

static void s_check_targets(drv_spec_check_t *check, const char *node_path, const char *where, const json_t *to,
                            bool required)
{
    char path[300];
    snprintf(path, sizeof path, "%s.%s", node_path, where);
    if (!to && !required) {
        return;
    }
    if (!json_is_array(to) || (required && json_array_size(to) == 0)) {
        drv_spec_check_problem(check, path, "must be a non-empty list of node ids");
        return;
    }
    size_t i;
    json_t *id;
    json_array_foreach(to, i, id)
    {
        if (!json_is_string(id)) {
            drv_spec_check_problem(check, path, "item %zu must be a node id", i);
        }
    }
}

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    json_t *routes = json_object_get(config, "routes");
    if (!json_is_array(routes) || json_array_size(routes) == 0) {
        char path[300];
        snprintf(path, sizeof path, "%s.config.routes", node_path);
        drv_spec_check_problem(check, path, "must be a non-empty list of {when: {field, op, value}, to: [node...]}");
        return;
    }
    size_t i;
    json_t *route;
    json_array_foreach(routes, i, route)
    {
        char where[64];
        snprintf(where, sizeof where, "config.routes[%zu]", i);
        if (!json_is_object(route)) {
            char path[300];
            snprintf(path, sizeof path, "%s.%s", node_path, where);
            drv_spec_check_problem(check, path, "must be a map with when and to");
            continue;
        }
        const char *key;
        json_t *value;
        json_object_foreach(route, key, value)
        {
            if (strcmp(key, "when") && strcmp(key, "condition") && strcmp(key, "to")) {
                char path[300];
                snprintf(path, sizeof path, "%s.%s", node_path, where);
                drv_spec_check_problem(check, path, "unknown key \"%s\" (condition or when, to)", key);
            }
        }
        char when[80], to[80];
        snprintf(when, sizeof when, "%s.when", where);
        snprintf(to, sizeof to, "%s.to", where);
        json_t *condition = json_object_get(route, "condition");
        if (condition && json_object_get(route, "when")) {
            char path[300];
            snprintf(path, sizeof path, "%s.%s", node_path, where);
            drv_spec_check_problem(check, path, "condition (OTTL) or when ({field, op, value}), not both");
        } else if (condition) {
            snprintf(when, sizeof when, "%s.condition", where);
            if (!json_is_string(condition)) {
                char path[300];
                snprintf(path, sizeof path, "%s.%s", node_path, when);
                drv_spec_check_problem(check, path, "must be an OTTL condition in a string");
            } else {
                drv_ottl_check(check, node_path, when, condition, false);
            }
        } else {
            drv_condition_check(check, node_path, when, json_object_get(route, "when"), false);
        }
        s_check_targets(check, node_path, to, json_object_get(route, "to"), true);
    }
    s_check_targets(check, node_path, "config.default", json_object_get(config, "default"), false);
}

const drv_node_schema_t drv_schema_processor_route = {
    .name = "processor:route",
    .role = DRV_ROLE_PROCESSOR,
    .doc = "Sends each record to the nodes of the first route whose condition it meets, else to "
           "default; a record that meets none and has no default goes nowhere (counted as dropped). "
           "Its routes are its edges: it has no to.",
    .example = "{type: processor:route, config: {routes: [{condition: 'attributes[\"team\"] == \"pay\"', to: "
               "[out]}], default: [out]}}",
    .keys = {{.key = "routes",
              .kind = DRV_KEY_ANY,
              .required = true,
              .reference = drv_ottl_reference,
              .doc = "a list of {condition: 'OTTL' (or when: {field, op, value}), to: [node ids]}, tried in order "
                     "(the language: processor:transform)"},
             {.key = "default", .kind = DRV_KEY_ANY, .fallback = "[]", .doc = "node ids for records no route took"}},
    .check = s_check,
    .targets = s_targets,
};
