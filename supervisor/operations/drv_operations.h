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
#include "drv_rollout.h"

#include "drover/drv_problems.h"

//  One change of a pipeline's spec, whoever asks for it: the API's PUT and
//  rollback, a reload of the config file, a remote config, a restart's
//  restore. Each door only says what it wants and maps the outcome.
typedef struct {
    const char *group;
    const char *name;
    json_t *spec;            // normalized
    drv_rollout_opts_t opts; // how; opts.dry_run: planned only
    drv_source_t source;     // the pipeline's source once the change is made
    const char *owner;       // DRV_SOURCE_KUBERNETES: the resource, "namespace/name"
    bool source_if_changed;  // the API's: the source changes only when the rollout changes something
    bool admit;              // asked as a PUT is (drv_admission_check); a restore is not
    int64_t generation;      // the generation it comes up as (a restore keeps its number); 0: the next
} drv_change_t;

typedef enum {
    DRV_CHANGE_STARTED, // *rollout started: the pipeline's history owns it
    DRV_CHANGE_PLANNED, // a dry run: *rollout planned, not attached, the caller's to destroy
    DRV_CHANGE_INVALID, // problems say what is wrong (the admin API's 422)
    DRV_CHANGE_REFUSED, // why says what is in the way (409)
} drv_change_outcome_t;

drv_change_outcome_t drv_operations_apply(drv_engine_t *engine, const drv_change_t *change, drv_problems_t *problems,
                                          char *why, size_t whylen, drv_rollout_t **rollout);

//  engine->instance_listener: wakes the operation of the instance's pipeline.
void drv_operations_on_instance(drv_engine_t *engine, drv_instance_t *inst, drv_inst_event_t event, int code);
//  Runs the woken operations and those whose deadline came, and answers the
//  waiting requests whose time is up. Returns ms until the next deadline, or -1.
int64_t drv_operations_tick(drv_engine_t *engine);
//  droverd is stopping: every rollout under way ends where it stands, and
//  every pipeline not already stopping is shut down, draining for drain_ms.
void drv_operations_stop_all(drv_engine_t *engine, int64_t drain_ms);

#endif
