/*  drv_registry — groups, pipelines and instance slots.
    An instance slot is one (pipeline, core, generation); its process may be
    restarted many times, and its restart history lives with the slot. */
#include "drv_registry.h"

#include "drover/drv_spec.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void s_listener_free(void **item)
{
    drv_listener_t *listener = *item;
    if (listener) {
        close(listener->fd);
        free(listener);
        *item = NULL;
    }
}

static void s_pipeline_free(void **item)
{
    drv_pipeline_t *pipeline = *item;
    if (!pipeline) {
        return;
    }
    zlistx_destroy(&pipeline->instances);
    zlistx_destroy(&pipeline->listeners);
    zlistx_destroy(&pipeline->rollouts);
    zlistx_destroy(&pipeline->shutdowns);
    json_decref(pipeline->previous_spec);
    json_decref(pipeline->past_rollouts);
    json_decref(pipeline->tap_nodes);
    json_decref(pipeline->spec);
    free(pipeline->spec_hash);
    free(pipeline->status_text);
    free(pipeline->rates);
    free(pipeline);
    *item = NULL;
}

static void s_group_free(void **item)
{
    drv_group_t *group = *item;
    if (!group) {
        return;
    }
    zhashx_destroy(&group->pipelines);
    free(group);
    *item = NULL;
}

static void s_instance_free(void **item)
{
    drv_instance_t *inst = *item;
    if (inst) {
        if (inst->timers) {
            drv_timers_cancel(inst->timers, &inst->timer);
        }
        json_decref(inst->spec);
        json_decref(inst->nodes);
        json_decref(inst->buffer);
        free(inst);
    }
    *item = NULL;
}

static int s_same_pointer(const void *a, const void *b)
{
    return a == b ? 0 : a < b ? -1 : 1;
}

const char *drv_inst_state_name(drv_inst_state_t state)
{
    static const char *names[] = {"starting", "ready", "draining", "exited", "failed", "draining"};
    return state < DRV_INST_STATES ? names[state] : "?";
}

drv_source_t drv_source_named(const char *name, drv_source_t fallback)
{
    static const char *const names[] = DRV_SOURCE_NAMES;
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++) {
        if (!strcmp(names[i], name)) {
            return (drv_source_t)i;
        }
    }
    return fallback;
}

bool drv_source_kept(drv_source_t source)
{
    return source == DRV_SOURCE_OPAMP || source == DRV_SOURCE_KUBERNETES;
}

void drv_registry_set_owner(drv_pipeline_t *pipeline, const char *owner)
{
    snprintf(pipeline->owner, sizeof pipeline->owner, "%s", owner ? owner : "");
}

drv_group_t *drv_registry_group(drv_engine_t *engine, const char *name, bool create)
{
    if (!engine->groups) {
        engine->groups = zhashx_new();
        zhashx_set_destructor(engine->groups, s_group_free);
        engine->live = zhashx_new();
    }
    drv_group_t *group = zhashx_lookup(engine->groups, name);
    if (!group && create) {
        group = calloc(1, sizeof *group);
        snprintf(group->name, sizeof group->name, "%s", name);
        group->pipelines = zhashx_new();
        zhashx_set_destructor(group->pipelines, s_pipeline_free);
        zhashx_insert(engine->groups, name, group);
    }
    return group;
}

drv_pipeline_t *drv_registry_pipeline(drv_engine_t *engine, const char *group, const char *name)
{
    drv_group_t *g = drv_registry_group(engine, group, false);
    return g ? zhashx_lookup(g->pipelines, name) : NULL;
}

drv_pipeline_t *drv_registry_add_pipeline(drv_engine_t *engine, const char *group, const char *name, json_t *spec)
{
    drv_group_t *g = drv_registry_group(engine, group, true);
    drv_pipeline_t *pipeline = calloc(1, sizeof *pipeline);
    snprintf(pipeline->group, sizeof pipeline->group, "%s", group);
    snprintf(pipeline->name, sizeof pipeline->name, "%s", name);
    snprintf(pipeline->key, sizeof pipeline->key, "%s:%s", group, name);
    drv_registry_set_spec(engine, pipeline, spec);
    pipeline->listeners = zlistx_new();
    zlistx_set_destructor(pipeline->listeners, s_listener_free);
    pipeline->instances = zlistx_new();
    zlistx_set_destructor(pipeline->instances, s_instance_free);
    zlistx_set_comparator(pipeline->instances, s_same_pointer);
    //  The histories are filled by the operations layer, which sets their
    //  destructors when it adds to them (the registry does not know them).
    pipeline->rollouts = zlistx_new();
    zlistx_set_comparator(pipeline->rollouts, s_same_pointer);
    pipeline->shutdowns = zlistx_new();
    zlistx_set_comparator(pipeline->shutdowns, s_same_pointer);
    zhashx_insert(g->pipelines, name, pipeline);
    drv_registry_touch(engine, pipeline);
    return pipeline;
}

void drv_registry_set_spec(drv_engine_t *engine, drv_pipeline_t *pipeline, json_t *spec)
{
    json_incref(spec);
    json_decref(pipeline->spec);
    pipeline->spec = spec;
    free(pipeline->spec_hash);
    pipeline->spec_hash = drv_spec_hash(spec);
    if (!pipeline->spec_hash) { // only if the spec held what JSON cannot; every way in refuses that
        pipeline->spec_hash = strdup("sha1:unavailable");
    }
    pipeline->core_count = drv_spec_cores(spec, &engine->cpus, pipeline->cores, DRV_MAX_CORES);
    json_t *receivers = drv_spec_zmq_receivers(spec);
    pipeline->has_zmq = json_array_size(receivers) > 0;
    json_decref(receivers);
    if (pipeline->instances) { // added already (a new one is touched once it is)
        drv_registry_touch(engine, pipeline);
    }
}

drv_instance_t *drv_registry_add_instance(drv_engine_t *engine, drv_pipeline_t *pipeline, int core, int64_t generation,
                                          json_t *spec)
{
    drv_instance_t *inst = calloc(1, sizeof *inst);
    inst->pipeline = pipeline;
    inst->spec = json_incref(spec);
    json_t *receivers = drv_spec_zmq_receivers(spec);
    inst->has_zmq = json_array_size(receivers) > 0;
    json_decref(receivers);
    inst->core = core;
    inst->generation = generation;
    inst->state = DRV_INST_STARTING;
    inst->timers = engine->timers;
    snprintf(inst->id, sizeof inst->id, "%s/%s@%lld#%d", pipeline->group, pipeline->name, (long long)generation, core);
    zlistx_add_end(pipeline->instances, inst);
    zhashx_update(engine->live, inst->id, inst);
    drv_registry_touch(engine, pipeline);
    return inst;
}

drv_instance_t *drv_registry_find_instance(drv_pipeline_t *pipeline, int core, int64_t generation)
{
    for (drv_instance_t *inst = zlistx_first(pipeline->instances); inst; inst = zlistx_next(pipeline->instances)) {
        if (inst->core == core && inst->generation == generation) {
            return inst;
        }
    }
    return NULL;
}

void drv_registry_remove_instance(drv_engine_t *engine, drv_instance_t *inst)
{
    if (zhashx_lookup(engine->live, inst->id) == inst) {
        zhashx_delete(engine->live, inst->id);
    }
    drv_registry_touch(engine, inst->pipeline);
    void *handle = zlistx_find(inst->pipeline->instances, inst);
    if (handle) {
        zlistx_delete(inst->pipeline->instances, handle);
    }
}

drv_instance_t *drv_registry_by_pid(drv_engine_t *engine, pid_t pid)
{
    if (!engine->live || pid <= 0) {
        return NULL;
    }
    for (drv_instance_t *inst = zhashx_first(engine->live); inst; inst = zhashx_next(engine->live)) {
        if (inst->pid == pid) {
            return inst;
        }
    }
    return NULL;
}

void drv_registry_each_instance(drv_engine_t *engine, drv_instance_fn *fn, void *arg)
{
    if (!engine->live) {
        return;
    }
    //  Snapshot first: fn may remove instances.
    size_t count = zhashx_size(engine->live);
    drv_instance_t **all = calloc(count + 1, sizeof *all);
    size_t n = 0;
    for (drv_instance_t *inst = zhashx_first(engine->live); inst && n < count; inst = zhashx_next(engine->live)) {
        all[n++] = inst;
    }
    for (size_t i = 0; i < n; i++) {
        fn(engine, all[i], arg);
    }
    free(all);
}

size_t drv_registry_instance_count(drv_engine_t *engine)
{
    return engine->live ? zhashx_size(engine->live) : 0;
}

size_t drv_registry_pipeline_count(drv_engine_t *engine)
{
    size_t count = 0;
    if (engine->groups) {
        for (drv_group_t *g = zhashx_first(engine->groups); g; g = zhashx_next(engine->groups)) {
            count += zhashx_size(g->pipelines);
        }
    }
    return count;
}

drv_pipeline_t **drv_registry_pipelines(drv_engine_t *engine, size_t *count)
{
    size_t size = drv_registry_pipeline_count(engine), n = 0;
    drv_pipeline_t **all = calloc(size + 1, sizeof *all);
    if (!all) {
        abort(); // a pointer per pipeline
    }
    for (drv_group_t *g = engine->groups ? zhashx_first(engine->groups) : NULL; g; g = zhashx_next(engine->groups)) {
        for (drv_pipeline_t *p = zhashx_first(g->pipelines); p && n < size; p = zhashx_next(g->pipelines)) {
            all[n++] = p;
        }
    }
    *count = n;
    return all;
}

void drv_registry_each_pipeline(drv_engine_t *engine, drv_pipeline_fn *fn, void *arg)
{
    //  Snapshot first: fn may remove its pipeline, and may walk the hashes.
    size_t n;
    drv_pipeline_t **all = drv_registry_pipelines(engine, &n);
    for (size_t i = 0; i < n; i++) {
        fn(engine, all[i], arg);
    }
    free(all);
}

void drv_registry_touch(drv_engine_t *engine, drv_pipeline_t *pipeline)
{
    pipeline->changes++;
    if (pipeline->dirty) {
        return;
    }
    if (!engine->dirty) {
        engine->dirty = zlistx_new();
        zlistx_set_comparator(engine->dirty, s_same_pointer);
    }
    zlistx_add_end(engine->dirty, pipeline);
    pipeline->dirty = true;
}

drv_pipeline_t **drv_registry_take_dirty(drv_engine_t *engine, size_t *count)
{
    size_t n = engine->dirty ? zlistx_size(engine->dirty) : 0;
    drv_pipeline_t **all = calloc(n + 1, sizeof *all);
    *count = 0;
    if (!all) {
        return NULL; // they stay dirty: taken next time
    }
    drv_pipeline_t *p;
    while (n > 0 && (p = zlistx_detach(engine->dirty, NULL))) {
        p->dirty = false;
        all[(*count)++] = p;
    }
    return all;
}

void drv_registry_remove_pipeline(drv_engine_t *engine, drv_pipeline_t *pipeline)
{
    drv_registry_set_busy(engine, pipeline, false);
    if (pipeline->dirty) { // last: nothing touches it after this
        zlistx_delete(engine->dirty, zlistx_find(engine->dirty, pipeline));
        pipeline->dirty = false;
    }
    drv_group_t *g = drv_registry_group(engine, pipeline->group, false);
    if (g && zhashx_lookup(g->pipelines, pipeline->name) == pipeline) {
        zhashx_delete(g->pipelines, pipeline->name);
    }
}

void drv_registry_set_busy(drv_engine_t *engine, drv_pipeline_t *pipeline, bool busy)
{
    if (!engine->busy) {
        engine->busy = zlistx_new();
        zlistx_set_comparator(engine->busy, s_same_pointer);
    }
    void *handle = zlistx_find(engine->busy, pipeline);
    if (busy && !handle) {
        zlistx_add_end(engine->busy, pipeline);
    } else if (!busy && handle) {
        zlistx_delete(engine->busy, handle);
    }
    pipeline->woken = busy;
    drv_registry_touch(engine, pipeline); // an operation began or ended
}

void drv_registry_destroy(drv_engine_t *engine)
{
    zlistx_destroy(&engine->busy);
    zlistx_destroy(&engine->dirty);
    zhashx_destroy(&engine->live);
    zhashx_destroy(&engine->groups);
}
