/*  drv_registry — groups, pipelines and instances: finding, adding and
    removing them. The records themselves are in drv_engine.h. */
#ifndef DRV_REGISTRY_H
#define DRV_REGISTRY_H

#include "drv_engine.h"

drv_group_t *drv_registry_group(drv_engine_t *engine, const char *name, bool create);
drv_pipeline_t *drv_registry_pipeline(drv_engine_t *engine, const char *group, const char *name);
//  Registers a pipeline that does not run yet (generation 0, no instances):
//  a create rollout brings it up.
//  Its owning resource's "namespace/name" (NULL or "": none).
void drv_registry_set_owner(drv_pipeline_t *pipeline, const char *owner);
drv_pipeline_t *drv_registry_add_pipeline(drv_engine_t *engine, const char *group, const char *name, json_t *spec);
//  Sets the pipeline's spec (and its hash, cores and receivers) to spec.
void drv_registry_set_spec(drv_engine_t *engine, drv_pipeline_t *pipeline, json_t *spec);
drv_instance_t *drv_registry_add_instance(drv_engine_t *engine, drv_pipeline_t *pipeline, int core, int64_t generation,
                                          json_t *spec);
drv_instance_t *drv_registry_find_instance(drv_pipeline_t *pipeline, int core, int64_t generation);
void drv_registry_remove_instance(drv_engine_t *engine, drv_instance_t *inst);
drv_instance_t *drv_registry_by_pid(drv_engine_t *engine, pid_t pid);
//  Calls fn for every instance of every pipeline.
typedef void(drv_instance_fn)(drv_engine_t *engine, drv_instance_t *inst, void *arg);
void drv_registry_each_instance(drv_engine_t *engine, drv_instance_fn *fn, void *arg);
size_t drv_registry_instance_count(drv_engine_t *engine);
//  Every pipeline of every group, as a snapshot (free it): one flat walk
//  instead of two nested ones, unaffected by changes made during it.
drv_pipeline_t **drv_registry_pipelines(drv_engine_t *engine, size_t *count);
//  Calls fn for every pipeline of every group (a snapshot's walk); fn may
//  remove the pipeline it was given (no other).
typedef void(drv_pipeline_fn)(drv_engine_t *engine, drv_pipeline_t *pipeline, void *arg);
void drv_registry_each_pipeline(drv_engine_t *engine, drv_pipeline_fn *fn, void *arg);
//  Removes a pipeline and its instances' records (its processes must be gone).
void drv_registry_remove_pipeline(drv_engine_t *engine, drv_pipeline_t *pipeline);
//  Busy pipelines have an operation under way: the operations layer watches
//  only these (engine->busy), each when an instance event woke it.
void drv_registry_set_busy(drv_engine_t *engine, drv_pipeline_t *pipeline, bool busy);
//  Pipelines across all groups (engine.limits.max_pipelines bounds it).
size_t drv_registry_pipeline_count(drv_engine_t *engine);
//  What pipeline's status shows changed (an instance's state or counters,
//  its spec, a rollout or shutdown, its conditions' inputs): its cached
//  PipelineStatus is made again when next asked for, and its conditions are
//  refreshed on the loop's next turn. Every change of a shown field must
//  touch; DROVER_CHECK_STATUS_CACHE=1 (set by the tests) proves it.
void drv_registry_touch(drv_engine_t *engine, drv_pipeline_t *pipeline);
//  Takes the pipelines touched since the last call (the list is emptied).
drv_pipeline_t **drv_registry_take_dirty(drv_engine_t *engine, size_t *count);
void drv_registry_destroy(drv_engine_t *engine);
const char *drv_inst_state_name(drv_inst_state_t state);

#endif
