/*  exporter:http's schema (worker/nodes/drv_exporter_http.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"

#include <string.h>

const drv_node_schema_t drv_schema_exporter_http = {
    .name = "exporter:http",
    .role = DRV_ROLE_EXPORTER,
    .doc = "Posts batches to an HTTP endpoint, gzip'd, retried with backoff on connection errors, "
           "429, 502, 503 and 504 (honouring Retry-After); records are acknowledged upstream only "
           "once a 2xx came back.",
    .example = "{type: exporter:http, config: {endpoint: \"http://127.0.0.1:9000/ingest\", format: "
               "ndjson}}",
    .keys =
        {{.key = "endpoint", .kind = DRV_KEY_STRING, .required = true, .doc = "the http:// or https:// URL posted to"},
         {.key = "format",
          .kind = DRV_KEY_CHOICE,
          .fallback = "\"ndjson\"",
          .choices = "ndjson json msgpack",
          .doc = "the body: ndjson, json (an array) or msgpack (an array)"},
         DRV_EXPORT_KEYS},
    .check = drv_export_check,
    .complete = drv_export_complete,
};
