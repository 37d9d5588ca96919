/*  exporter:file's schema (worker/nodes/drv_exporter_file.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"

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
             DRV_QUEUE_KEY},
    .check = drv_queue_check,
};
