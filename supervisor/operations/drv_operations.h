/*  drv_operations — every change under way to a pipeline, as the loop sees
    them: a rollout (PUT, rollback, SIGHUP) or a shutdown (shutdown, DELETE,
    droverd's SIGTERM), each carried out by the executor.

    An operation runs when it starts, when an instance of its pipeline tells
    of an event (READY, exited: drv_operations_on_instance, the engine's
    instance listener), or when its deadline comes; the loop looks only at
    busy pipelines (engine->busy), never at every pipeline. */
#ifndef DRV_OPERATIONS_H
#define DRV_OPERATIONS_H

#include "drv_engine.h"

//  engine->instance_listener: wakes the operation of the instance's pipeline.
void drv_operations_on_instance(drv_engine_t *engine, drv_instance_t *inst, drv_inst_event_t event, int code);
//  Runs the woken operations and those whose deadline came, and answers the
//  waiting requests whose time is up. Returns ms until the next deadline, or -1.
int64_t drv_operations_tick(drv_engine_t *engine);
//  droverd is stopping: every rollout under way ends where it stands, and
//  every pipeline not already stopping is shut down, draining for drain_ms.
void drv_operations_stop_all(drv_engine_t *engine, int64_t drain_ms);

#endif
