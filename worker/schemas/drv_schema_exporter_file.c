/*  exporter:file's schema (worker/nodes/drv_exporter_file.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"

#include <string.h>

//  The bounds of rotate (worker/export/drv_rotate.h).
#define ROTATE_MIN_BYTES 4096
#define ROTATE_MAX_FILES 10000

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    drv_queue_check(check, node_path, config);
    json_t *rotate = json_object_get(config, "rotate");
    if (!rotate) {
        return;
    }
    if (!json_is_object(rotate) || !json_object_get(rotate, "max_bytes")) {
        drv_spec_check_problem(check, node_path, "config.rotate: must be a map with max_bytes (max_files, compress)");
        return;
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)rotate, key, value)
    {
        if (!strcmp(key, "max_bytes")) {
            if (!json_is_integer(value) || json_integer_value(value) < ROTATE_MIN_BYTES) {
                drv_spec_check_problem(check, node_path, "config.rotate.max_bytes: must be an integer of at least %d",
                                       ROTATE_MIN_BYTES);
            }
        } else if (!strcmp(key, "max_files")) {
            if (!json_is_integer(value) || json_integer_value(value) < 1 ||
                json_integer_value(value) > ROTATE_MAX_FILES) {
                drv_spec_check_problem(check, node_path, "config.rotate.max_files: must be an integer from 1 to %d",
                                       ROTATE_MAX_FILES);
            }
        } else if (!strcmp(key, "compress")) {
            if (!json_is_boolean(value)) {
                drv_spec_check_problem(check, node_path, "config.rotate.compress: must be true or false");
            }
        } else {
            drv_spec_check_problem(check, node_path, "config.rotate.%s: unknown key (max_bytes, max_files, compress)",
                                   key);
        }
    }
}

const drv_node_schema_t drv_schema_exporter_file = {
    .name = "exporter:file",
    .role = DRV_ROLE_EXPORTER,
    .doc = "Appends records to a file, one batch per write (never interleaved); a write that fails "
           "(full disk) is retried without blocking the instance, the batch held and not "
           "acknowledged meanwhile. An NDJSON file that ends in the middle of a line (a writer "
           "killed mid-write) goes on from a new line: only the cut record, never acknowledged "
           "and sent again, is left unreadable.",
    .example = "{type: exporter:file, config: {path: "
               "\"/tmp/drover-demo/out-{core}-{generation}.ndjson\"}}",
    .keys = {{.key = "path",
              .kind = DRV_KEY_FILE_PATH,
              .required = true,
              .doc = "the file; {core}, {generation}, {pipeline}, {group} are expanded, directories made; "
                     "confined to engine.data_dirs"},
             {.key = "format",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"ndjson\"",
              .choices = "ndjson msgpack",
              .doc = "ndjson (one JSON object a line) or msgpack"},
             {.key = "rotate",
              .kind = DRV_KEY_OBJECT,
              .doc = "{max_bytes, max_files: 5, compress: false}: once the file holds max_bytes (at least 4096) it "
                     "is renamed aside as PATH.<UTC time> between two batches and a new one begun; compress gzips "
                     "what is set aside (in a thread: PATH.<time>.gz); only the max_files newest set aside are "
                     "kept. Absent: the file grows without bound"},
             DRV_QUEUE_KEY},
    .check = s_check,
};
