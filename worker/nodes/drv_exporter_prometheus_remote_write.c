/*  exporter:prometheus_remote_write — metric records as Prometheus remote
    write 1.0 (worker/prom/ translates and encodes them). Batching, the
    queue, retries and acknowledgement are drv_export's (drv_export.h);
    series are sharded over SHARDS lanes of the one URL (as
    Prometheus shards its queue), each lane one request in flight at a
    time, so that the samples of a series reach the backend in time order
    across requests (Prometheus refuses older samples than it holds) while
    several requests are under way (drv_prom_shard says which lane). A record that cannot be written as
    Prometheus holds metrics is given up at once, counted as an error. */
#include "drv_export.h"
#include "drv_node.h"
#include "drv_prom.h"
#include "drv_schemas.h"

#include <stdlib.h>
#include <string.h>

#define SHARDS 3 // lanes of one request in flight each (docs/operations.md)

typedef struct {
    drv_export_t *export; // first: drv_export's hooks find it there
    char *url;
} remote_write_t;

static const char *const s_headers[] = {"Content-Encoding: snappy", "X-Prometheus-Remote-Write-Version: 0.1.0", NULL};

static int s_encode(void *arg, int lane, const msgpack_object *records, size_t count, drv_buf_t *body, char *err,
                    size_t errlen)
{
    (void)arg, (void)lane;
    return drv_prom_encode(records, count, body, err, errlen);
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    remote_write_t *self = calloc(1, sizeof *self);
    node->state = self;
    self->url = strdup(json_string_value(json_object_get(config, "endpoint")));
    //  drv_export closes a batch at max_records: here, max_samples.
    json_t *copy = json_deep_copy(config);
    json_t *batch = json_object_get(copy, "batch");
    json_object_set(batch, "max_records", json_object_get(batch, "max_samples"));
    drv_export_format_t exporting = {.lane_count = SHARDS,
                                     .encode = s_encode,
                                     .arg = self,
                                     .headers = s_headers,
                                     .in_flight = SHARDS,
                                     .lanes_in_order = true};
    for (int i = 0; i < SHARDS; i++) {
        exporting.lanes[i] = (drv_export_lane_t){self->url, "application/x-protobuf"};
    }
    self->export = drv_export_new(node, copy, &exporting, err, errlen);
    json_decref(copy);
    return self->export ? 0 : -1;
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    remote_write_t *self = node->state;
    for (size_t i = 0; i < n; i++) {
        const char *why;
        int lane = drv_prom_shard(&records[i], SHARDS, &why);
        if (lane < 0) {
            drv_node_record_error(node, why);
            drv_node_count_gave_up(node, 1);
        } else {
            drv_export_record(self->export, lane, &records[i]);
        }
    }
}

static void s_destroy(drv_node_t *node)
{
    remote_write_t *self = node->state;
    if (!self) {
        return;
    }
    drv_export_destroy(&self->export);
    free(self->url);
    free(self);
}

const drv_node_kind_t drv_exporter_prometheus_remote_write = {
    .schema = &drv_schema_exporter_prometheus_remote_write,
    .init = s_init,
    .run = s_run,
    DRV_EXPORT_NODE_HOOKS,
    .destroy = s_destroy,
};
