/*  drv_shutdown — see drv_shutdown.h. The planner's shutdown plan, carried
    out by the executor as a rollout's is: the broker closes the pipeline's
    front doors first (forwarding what it already accepted), then each
    instance gets its DRAIN marker after its last batch; an instance that does
    not exit by drain_timeout_secs gets SIGTERM, and SIGKILL 5 s later
    (drv_lifecycle). */
#include "drv_shutdown.h"
#include "drv_apply.h"
#include "drv_executor.h"
#include "drv_registry.h"
#include "drv_listeners.h"
#include "drv_events.h"

#include "drover/drv_log.h"
#include "drover/drv_spec.h"
#include "drover/drv_time.h"

#include <stdio.h>
#include <string.h>

typedef enum { CORE_REQUESTED = 0, CORE_DRAINING, CORE_EXITED, CORE_KILLED } core_state_t;
static const char *s_core_names[] = {"shutdown_requested", "draining", "exited", "killed"};

typedef struct {
    char instance[DRV_ID_MAX];
    int core;
    int64_t generation;
    core_state_t state;
    char detail[120];
} shutdown_core_t;

struct drv_shutdown_t {
    char id[32];
    char group[64];
    char pipeline[64];
    drv_pipeline_t *owner;
    bool forget; // DELETE: remove the pipeline at the end
    bool done;
    int64_t started_at, updated_at;
    int64_t drain_timeout_ms;
    shutdown_core_t *cores; // one per instance it stops, owned
    int core_count;
    drv_plan_t plan; // close, retire every instance, wait for each
    drv_executor_t exec;
    drv_op_listeners_t *on_end; // told when it ends (the admin layer's waiting requests)
    uint64_t changes;           // bumped by every change of what its ShutdownStatus shows
};

static void s_changed(drv_shutdown_t *self)
{
    self->updated_at = drv_time_wall_ms();
    self->changes++;
}

//  What its status shows changed, and so what its pipeline's shows.
static void s_touch(drv_engine_t *engine, drv_shutdown_t *self)
{
    s_changed(self);
    if (self->owner) {
        drv_registry_touch(engine, self->owner);
    }
}

static json_t *s_time(int64_t ms)
{
    char buf[40];
    drv_time_rfc3339(ms, buf, sizeof buf);
    return json_string(buf);
}

static void s_shutdown_free(void **item)
{
    drv_shutdown_destroy((drv_shutdown_t **)item);
}

drv_shutdown_t *drv_shutdown_start(drv_engine_t *engine, drv_pipeline_t *pipeline, int64_t drain_timeout_ms,
                                   bool forget)
{
    drv_shutdown_t *self = calloc(1, sizeof *self);
    snprintf(self->id, sizeof self->id, "shutdown-%lld", (long long)++engine->next_shutdown_id);
    snprintf(self->group, sizeof self->group, "%s", pipeline->group);
    snprintf(self->pipeline, sizeof self->pipeline, "%s", pipeline->name);
    self->owner = pipeline;
    self->forget = forget;
    self->on_end = drv_op_listeners_new();
    self->started_at = self->updated_at = drv_time_wall_ms();
    self->drain_timeout_ms = drain_timeout_ms > 0
                                 ? drain_timeout_ms
                                 : drv_spec_policy(pipeline->spec, "rollout", "drain_timeout_secs") * 1000;
    zlistx_set_destructor(pipeline->shutdowns, s_shutdown_free); // the history owns its shutdowns
    zlistx_add_end(pipeline->shutdowns, self);
    while (zlistx_size(pipeline->shutdowns) > DRV_SHUTDOWN_HISTORY) {
        zlistx_first(pipeline->shutdowns); // the oldest, finished: one runs at a time
        zlistx_delete(pipeline->shutdowns, zlistx_cursor(pipeline->shutdowns));
    }
    //  Every slot that exists now is stopped: the plan, and one entry each.
    size_t count = zlistx_size(pipeline->instances);
    drv_slot_t *slots = calloc(count + 1, sizeof *slots);
    self->cores = calloc(count + 1, sizeof *self->cores);
    for (drv_instance_t *inst = zlistx_first(pipeline->instances); inst; inst = zlistx_next(pipeline->instances)) {
        slots[self->core_count] = (drv_slot_t){inst->core, inst->generation};
        shutdown_core_t *c = &self->cores[self->core_count++];
        snprintf(c->instance, sizeof c->instance, "%s", inst->id);
        c->core = inst->core;
        c->generation = inst->generation;
        c->state = CORE_REQUESTED;
        snprintf(c->detail, sizeof c->detail, "shutdown requested");
    }
    drv_plan_shutdown(slots, (size_t)self->core_count, pipeline->generation, forget, &self->plan);
    free(slots);
    drv_executor_begin(&self->exec, &self->plan, 0);
    pipeline->shutdown_active = self;
    drv_info("pipeline shutdown started pipeline=%s id=%s forget=%s", pipeline->key, self->id, forget ? "yes" : "no");
    drv_events_publish(engine, "shutdown.running", pipeline->group, pipeline->name,
                       json_pack("{s:s}", "shutdown_id", self->id));
    //  The loop runs it (even a DELETE of a pipeline with no instance), so
    //  the caller may still use the record now.
    drv_registry_set_busy(engine, pipeline, true);
    return self;
}

void drv_shutdown_destroy(drv_shutdown_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_shutdown_t *self = *self_p;
    drv_op_listeners_destroy(&self->on_end); // DRV_OP_DISCARDED to whoever still waits
    drv_executor_end(&self->exec);
    drv_plan_clear(&self->plan);
    free(self->cores);
    free(self);
    *self_p = NULL;
}

const char *drv_shutdown_id(const drv_shutdown_t *self)
{
    return self->id;
}

bool drv_shutdown_finished(const drv_shutdown_t *self)
{
    return self->done;
}

drv_shutdown_t *drv_shutdown_find(drv_pipeline_t *pipeline, const char *id)
{
    for (drv_shutdown_t *s = zlistx_first(pipeline->shutdowns); s; s = zlistx_next(pipeline->shutdowns)) {
        if (!strcmp(s->id, id)) {
            return s;
        }
    }
    return NULL;
}

json_t *drv_shutdown_json(const drv_shutdown_t *self)
{
    json_t *cores = json_array();
    for (int i = 0; i < self->core_count; i++) {
        const shutdown_core_t *c = &self->cores[i];
        json_array_append_new(cores, json_pack("{s:i, s:I, s:s, s:s, s:s}", "core", c->core, "generation",
                                               (json_int_t)c->generation, "instance", c->instance, "state",
                                               s_core_names[c->state], "detail", c->detail));
    }
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:n, s:o, s:b, s:o, s:I}", "shutdown_id", self->id, "group",
                     self->group, "pipeline", self->pipeline, "state", self->done ? "succeeded" : "running",
                     "started_at", s_time(self->started_at), "updated_at", s_time(self->updated_at), "failure_reason",
                     "cores", cores, "forget", self->forget, "plan", drv_plan_to_json(&self->plan), "step",
                     (json_int_t)self->exec.next);
}

static shutdown_core_t *s_core(drv_shutdown_t *self, int core, int64_t generation)
{
    for (int i = 0; i < self->core_count; i++) {
        if (self->cores[i].core == core && self->cores[i].generation == generation) {
            return &self->cores[i];
        }
    }
    return NULL;
}

//  A retired instance drains if it was running; one waiting to restart is just gone.
static void s_note(void *record, const drv_step_t *step, drv_step_phase_t phase, const drv_slot_view_t *slot)
{
    drv_shutdown_t *self = record;
    shutdown_core_t *c = s_core(self, step->core, step->generation);
    if (!c || step->op != DRV_OP_RETIRE || phase != DRV_STEP_BEGUN) {
        return;
    }
    bool running = slot->state == DRV_SLOT_STARTING || slot->state == DRV_SLOT_READY;
    c->state = running ? CORE_DRAINING : CORE_EXITED;
    snprintf(c->detail, sizeof c->detail, "%s", running ? "draining" : "was not running");
    s_changed(self); // the pipeline is touched once the executor's run is over
}

void drv_shutdown_on_instance(drv_engine_t *engine, drv_instance_t *inst, drv_inst_event_t event, int code)
{
    (void)engine;
    drv_shutdown_t *self = inst->pipeline->shutdown_active;
    if (!self || event != DRV_INST_EV_EXITED) {
        return;
    }
    for (int i = 0; i < self->core_count; i++) {
        shutdown_core_t *c = &self->cores[i];
        if (!strcmp(c->instance, inst->id)) {
            c->state = code == 128 + 9 ? CORE_KILLED : CORE_EXITED;
            if (code > 128) {
                snprintf(c->detail, sizeof c->detail, "killed by signal %d", code - 128);
            } else {
                snprintf(c->detail, sizeof c->detail, "exited with code %d", code);
            }
            s_touch(engine, self);
        }
    }
}

int drv_shutdown_on_end(drv_shutdown_t *self, drv_op_end_fn *fn, void *arg)
{
    return self->on_end ? drv_op_listeners_add(self->on_end, fn, arg) : -1;
}

void drv_shutdown_forget(drv_shutdown_t *self, void *arg)
{
    if (self->on_end) {
        drv_op_listeners_remove(self->on_end, arg);
    }
}

void drv_shutdown_run(drv_engine_t *engine, drv_pipeline_t *p)
{
    drv_shutdown_t *self = p->shutdown_active;
    if (!self) {
        return;
    }
    drv_apply_t apply = {.engine = engine,
                         .pipeline = p,
                         .target_spec = p->spec,
                         .target_generation = p->generation,
                         .drain_timeout_ms = self->drain_timeout_ms,
                         .record = self,
                         .note = s_note};
    drv_effects_t fx = drv_apply_effects(&apply);
    size_t before = self->exec.next;
    uint64_t changes = self->changes;
    drv_exec_result_t result = drv_executor_run(&self->exec, &fx, drv_time_mono_ms());
    if (self->exec.next != before || self->changes != changes) {
        s_touch(engine, self);
    }
    if (result != DRV_EXEC_DONE) {
        return; // an instance still draining (drain, SIGTERM, SIGKILL deadlines are the instance's)
    }
    self->done = true;
    s_touch(engine, self);
    p->shutdown_active = NULL;
    p->running = false;
    p->shut_down = true;
    drv_listeners_prune(p); // stopped: its sockets close (a new PUT binds them again)
    engine->state_dirty = true;
    drv_registry_set_busy(engine, p, false);
    drv_info("pipeline shutdown succeeded pipeline=%s id=%s", p->key, self->id);
    drv_events_publish(engine, "shutdown.succeeded", p->group, p->name, json_pack("{s:s}", "shutdown_id", self->id));
    drv_op_listeners_fire(self->on_end, DRV_OP_ENDED);
    if (self->forget) {
        drv_info("pipeline deleted pipeline=%s", p->key);
        drv_events_publish(engine, "pipeline.deleted", p->group, p->name, NULL);
        drv_registry_remove_pipeline(engine, p);
    }
}
