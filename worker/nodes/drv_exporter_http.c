/*  exporter:http — posts batches of records to a URL as NDJSON (one JSON
    object per line), a JSON array, or a msgpack array; gzip'd unless
    compression says none. Batching, retries and acknowledgement are
    drv_export's (drv_export.h). */
#include "drv_export.h"
#include "drv_ndjson.h"
#include "drv_node.h"
#include "drv_schemas.h"

#include <stdlib.h>
#include <string.h>

typedef enum { FORMAT_NDJSON, FORMAT_JSON, FORMAT_MSGPACK } format_t;

typedef struct {
    drv_export_t *export; // first: drv_export's hooks find it there
    format_t format;
    char *url;
} http_t;

static int s_encode(void *arg, int lane, const msgpack_object *records, size_t count, drv_buf_t *body, char *err,
                    size_t errlen)
{
    (void)lane;
    http_t *self = arg;
    int rc = 0;
    if (self->format == FORMAT_MSGPACK) {
        msgpack_packer pk;
        msgpack_packer_init(&pk, body, drv_buf_msgpack_write);
        rc = msgpack_pack_array(&pk, count);
        for (size_t i = 0; i < count && rc == 0; i++) {
            rc = msgpack_pack_object(&pk, records[i]);
        }
    } else {
        rc = self->format == FORMAT_JSON ? drv_buf_putc(body, '[') : 0;
        for (size_t i = 0; i < count && rc == 0; i++) {
            if (self->format == FORMAT_JSON && i > 0) {
                rc = drv_buf_putc(body, ',');
            }
            rc = rc ? rc : drv_ndjson_append(body, &records[i]);
            if (rc == 0 && self->format == FORMAT_JSON) {
                body->len--; // the line's newline: JSON wants a comma there
            }
        }
        if (rc == 0 && self->format == FORMAT_JSON) {
            rc = drv_buf_putc(body, ']');
        }
    }
    if (rc != 0) {
        snprintf(err, errlen, "out of memory encoding");
    }
    return rc;
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    http_t *self = calloc(1, sizeof *self);
    node->state = self;
    const char *format = json_string_value(json_object_get(config, "format"));
    self->format = !strcmp(format, "json") ? FORMAT_JSON : !strcmp(format, "msgpack") ? FORMAT_MSGPACK : FORMAT_NDJSON;
    self->url = strdup(json_string_value(json_object_get(config, "endpoint")));
    drv_export_format_t exporting = {.lanes = {{self->url, self->format == FORMAT_JSON      ? "application/json"
                                                           : self->format == FORMAT_MSGPACK ? "application/msgpack"
                                                                                            : "application/x-ndjson"}},
                                     .lane_count = 1,
                                     .encode = s_encode,
                                     .arg = self};
    self->export = drv_export_new(node, config, &exporting, err, errlen);
    return self->export ? 0 : -1;
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    http_t *self = node->state;
    for (size_t i = 0; i < n; i++) {
        drv_export_record(self->export, 0, &records[i]);
    }
}

static void s_destroy(drv_node_t *node)
{
    http_t *self = node->state;
    if (self) {
        drv_export_destroy(&self->export);
        free(self->url);
        free(self);
    }
}

const drv_node_kind_t drv_exporter_http = {
    .schema = &drv_schema_exporter_http,
    .init = s_init,
    .run = s_run,
    DRV_EXPORT_NODE_HOOKS,
    .destroy = s_destroy,
};
