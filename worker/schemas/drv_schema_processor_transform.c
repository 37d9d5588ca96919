/*  processor:transform's schema (worker/nodes/drv_processor_transform.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"
#include "drover/drv_path.h"

#include <stdio.h>

//  name (at path) as a record path (docs/operations.md, "Record paths").
static void s_path(drv_spec_check_t *check, const char *path, const char *name)
{
    drv_path_t parsed;
    char err[200];
    if (name && drv_path_parse(name, &parsed, err, sizeof err) != 0) {
        drv_spec_check_problem(check, path, "\"%s\" is not a path: %s", name, err);
    } else if (name) {
        drv_path_free(&parsed);
    }
}

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    char at[512];
    const char *key;
    json_t *value;
    json_object_foreach(json_object_get(config, "set"), key, value)
    {
        snprintf(at, sizeof at, "%s.config.set", node_path);
        s_path(check, at, key);
    }
    json_object_foreach(json_object_get(config, "rename"), key, value)
    {
        snprintf(at, sizeof at, "%s.config.rename", node_path);
        s_path(check, at, key);
        s_path(check, at, json_string_value(value));
    }
    size_t i;
    json_array_foreach(json_object_get(config, "delete"), i, value)
    {
        snprintf(at, sizeof at, "%s.config.delete[%zu]", node_path, i);
        s_path(check, at, json_string_value(value));
    }
    json_t *statements = json_object_get(config, "statements");
    if (statements) {
        drv_ottl_check(check, node_path, "config.statements", statements, true);
    }
}

const drv_node_schema_t drv_schema_processor_transform = {
    .name = "processor:transform",
    .role = DRV_ROLE_PROCESSOR,
    .doc = "Changes fields: set, then rename, then delete, then its OTTL statements in order, as the "
           "Collector's transform processor runs them (docs/ottl.md). A name is a top-level field, or a path into "
           "maps as OTTL writes it: attributes[\"http.method\"], resource[\"service.name\"], scope.name.",
    .example = "{type: processor:transform, config: {set: {env: prod}, rename: {msg: message}, delete: "
               "[debug]}, to: [out]}",
    .keys = {{.key = "set",
              .kind = DRV_KEY_OBJECT,
              .fallback = "{}",
              .doc = "fields set on every record (replacing what is there)"},
             {.key = "rename", .kind = DRV_KEY_STRING_MAP, .fallback = "{}", .doc = "old name: new name"},
             {.key = "delete", .kind = DRV_KEY_STRING_LIST, .fallback = "[]", .doc = "fields removed"},
             {.key = "statements",
              .kind = DRV_KEY_ANY,
              .reference = drv_ottl_reference,
              .doc = "OTTL statements (strings): an editor and its where, e.g. 'set(attributes[\"env\"], \"prod\") "
                     "where resource.attributes[\"k8s.namespace.name\"] == \"shop\"'"},
             {.key = "error_mode",
              .kind = DRV_KEY_CHOICE,
              .choices = "propagate ignore silent",
              .doc = "a statement that fails: propagate (the record counted in errors, handed on as it came), "
                     "ignore (the statement skipped, counted), silent (skipped, not counted)"}},
    .details = drv_ottl_reference,
    .check = s_check,
};
