/*  receiver:journald's schema (worker/nodes/drv_receiver_journald.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_node_schema.h"

#include <string.h>

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    char at[512];
    const char *directory = json_string_value(json_object_get(config, "directory"));
    if (directory && directory[0] != '/') {
        snprintf(at, sizeof at, "%s.config.directory", node_path);
        drv_spec_check_problem(check, at, "must be an absolute path");
    }
    size_t i;
    json_t *match;
    json_array_foreach(json_object_get(config, "matches"), i, match)
    {
        const char *text = json_string_value(match);
        const char *eq = text ? strchr(text, '=') : NULL;
        bool field_ok = eq && eq > text;
        for (const char *p = text; field_ok && p < eq; p++) {
            field_ok = (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_';
        }
        if (!field_ok) {
            snprintf(at, sizeof at, "%s.config.matches[%zu]", node_path, i);
            drv_spec_check_problem(check, at, "must be FIELD=value, FIELD in capitals, digits and _");
        }
    }
}

const drv_node_schema_t drv_schema_receiver_journald = {
    .name = "receiver:journald",
    .role = DRV_ROLE_RECEIVER,
    .doc = "Reads the systemd journal with sd-journal: body from MESSAGE, severity from PRIORITY, "
           "time_unix_nano from the entry's realtime, the other fields as attributes. Its checkpoint is the "
           "journal cursor, under engine.buffer_dir, and advances only when what was read before it is "
           "settled; on several cores one instance reads (the one holding the cursor's lock).",
    .example = "{type: receiver:journald, config: {units: [nginx.service]}, to: [out]}",
    .keys = {{.key = "directory",
              .kind = DRV_KEY_STRING,
              .doc = "a journal directory (absolute); not given: the system journal"},
             {.key = "units", .kind = DRV_KEY_STRING_LIST, .fallback = "[]", .doc = "_SYSTEMD_UNIT values; [] all"},
             {.key = "matches",
              .kind = DRV_KEY_STRING_LIST,
              .fallback = "[]",
              .doc = "FIELD=value matches (the same field: any of them; different fields: all)"},
             {.key = "start_at",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"end\"",
              .choices = "end beginning",
              .doc = "where reading starts when there is no checkpoint yet"}},
    .check = s_check,
};
