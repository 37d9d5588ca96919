/*  drv_shutdown — stopping one pipeline: close its front doors, drain every
    instance (SIGTERM, then SIGKILL at drain_timeout), tracked as a
    ShutdownStatus. DELETE is a shutdown that forgets the pipeline at the end;
    droverd's own stop (SIGTERM) is one shutdown per pipeline. Carried out by
    the executor, from the loop (drv_operations.h). */
#ifndef DRV_SHUTDOWN_H
#define DRV_SHUTDOWN_H

#include "drv_engine.h"
#include "drv_op_end.h"

#define DRV_SHUTDOWN_HISTORY 32 // shutdowns kept per pipeline, like rollouts

typedef struct drv_shutdown_t drv_shutdown_t;

//  Starts shutting the pipeline down (the loop carries it out: the record
//  stays valid until the caller returns). drain_timeout_ms 0: the spec's
//  rollout policy. forget: remove the pipeline once stopped (DELETE).
drv_shutdown_t *drv_shutdown_start(drv_engine_t *engine, drv_pipeline_t *pipeline, int64_t drain_timeout_ms,
                                   bool forget);
void drv_shutdown_destroy(drv_shutdown_t **self_p);
json_t *drv_shutdown_json(const drv_shutdown_t *self);
const char *drv_shutdown_id(const drv_shutdown_t *self);
bool drv_shutdown_finished(const drv_shutdown_t *self);
drv_shutdown_t *drv_shutdown_find(drv_pipeline_t *pipeline, const char *id);
//  Instance events (engine->instance_listener): an instance of a pipeline
//  being shut down exited with this code.
void drv_shutdown_on_instance(drv_engine_t *engine, drv_instance_t *inst, drv_inst_event_t event, int code);
//  fn(arg, how) once the shutdown ends, or its record is discarded first
//  (drv_op_end.h); forget stops it. -1 out of memory.
int drv_shutdown_on_end(drv_shutdown_t *self, drv_op_end_fn *fn, void *arg);
void drv_shutdown_forget(drv_shutdown_t *self, void *arg);
//  Runs the pipeline's shutdown as far as it can go now; at the end the
//  shutdown succeeds, and a DELETE removes the pipeline (and the record).
void drv_shutdown_run(drv_engine_t *engine, drv_pipeline_t *pipeline);

#endif
