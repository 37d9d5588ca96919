/*  drv_status — PipelineStatus documents and their conditions, and /readyz. */
#ifndef DRV_STATUS_H
#define DRV_STATUS_H

#include "drv_engine.h"

//  Re-evaluates every pipeline's conditions; call once per loop turn.
void drv_status_refresh(drv_engine_t *engine);
const char *drv_status_phase(const drv_pipeline_t *pipeline);
json_t *drv_status_pipeline(drv_engine_t *engine, drv_pipeline_t *pipeline);
json_t *drv_status_all(drv_engine_t *engine);
//  The same document as JSON text (a poll of GET /status over HTTP): each
//  pipeline's part is kept and made again only when what it shows changed.
char *drv_status_all_text(drv_engine_t *engine);
//  True when every pipeline that should run is ready; reasons lists what is not.
bool drv_status_ready(drv_engine_t *engine, json_t *reasons);
int drv_status_ready_instances(const drv_pipeline_t *pipeline);

//  The pipeline's totals since it was created: what ended processes counted,
//  plus what the running ones count now. A replace never takes them back.
typedef struct {
    int64_t records_in, records_out, errors;
} drv_totals_t;
drv_totals_t drv_status_totals(const drv_pipeline_t *pipeline);

//  The pipeline's buffer (policies.buffer, docs/operations.md, disk buffers), over its live
//  instances' last heartbeats; the counters add what ended processes counted.
typedef struct {
    bool disk;
    int64_t bytes, records;
    int64_t oldest_age_ms; // how old the oldest input not settled was at the last heartbeat
    int64_t replayed, dropped, corrupt_segments;
    bool full; // an instance's buffer takes nothing more
} drv_buffer_totals_t;
drv_buffer_totals_t drv_status_buffer(const drv_pipeline_t *pipeline);

//  {node: {records_in, records_out, records_dropped, errors, ...}} from a
//  heartbeat's {node: [in, out, dropped, errors, ...]} (new reference); an
//  exporter is lagging once its queue's oldest record is lag_ms old
//  (half policies.health.exporter_failing_secs).
json_t *drv_status_nodes(const json_t *heartbeat_nodes, int64_t lag_ms);

#endif
