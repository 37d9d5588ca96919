/*  drv_rollout — the executor. A rollout walks its plan:

      start       create the instance slot (core, generation) and spawn it, gated:
                  if it exits before READY the step fails instead of restarting
      wait_ready  until it is READY (the broker routes to it from then on),
                  failing after step_timeout_secs or if it exits
      switch      the core is now served by the new generation
      drain       the old instance drains (DRAIN marker after its last batch),
                  exports everything and exits; SIGTERM/SIGKILL at drain_timeout
      stop        (rollback) a new instance goes: drained if ready, else stopped

    A failed step turns the rollout to rolling_back, with a plan from the
    planner that gives every core back to the old generation; if that fails
    too, the rollout ends rollback_failed and the status shows the mix. */
#include "drv_rollout.h"
#include "drv_waiters.h"

#include "drover/drv_log.h"
#include "drover/drv_msg.h"
#include "drover/drv_spec.h"
#include "drover/drv_time.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef enum {
    CORE_PENDING = 0,
    CORE_STARTING,
    CORE_READY,
    CORE_SWITCHED,
    CORE_DRAINING_OLD,
    CORE_RETIRED,
    CORE_FAILED,
    CORE_ROLLED_BACK,
} core_state_t;

static const char *s_core_state_names[] = {"pending", "starting",    "ready",  "switched",
                                           "draining_old", "retired", "failed", "rolled_back"};
static const char *s_state_names[] = {"pending", "running", "succeeded", "failed", "rolling_back",
                                      "rollback_failed"};

typedef struct {
    int core;
    int64_t previous_generation; // 0: the core was not served before
    int64_t target_generation;   // 0: the core is being given up
    core_state_t state;
    char detail[200];
    int64_t started_ms;          // mono: when its new instance was started (its wait_ready deadline base)
} rollout_core_t;

struct drv_rollout_t {
    char id[32];                 // "rollout-N"
    char group[64];
    char pipeline[64];
    drv_pipeline_t *owner;       // set once started
    drv_rollout_state_t state;
    bool dry_run;
    int64_t started_at;          // wall ms
    int64_t updated_at;
    char failure_reason[400];
    bool supervised;             // from the config file: keep trying, never roll back
    drv_plan_t plan;             // what to do
    size_t next;                 // next step of plan
    drv_plan_t rollback;         // what to undo, once failed
    size_t rollback_next;
    int64_t step_deadline_ms;    // mono: the current wait_ready must be done by then
    int64_t step_timeout_ms;
    int64_t drain_timeout_ms;
    json_t *new_spec;            // target generation's spec (released once finished)
    json_t *old_spec;            // previous generation's spec, or NULL (released once finished)
    int *old_cores;              // old_core_count of them, owned
    int old_core_count;
    int64_t old_generation;
    bool old_running;
    rollout_core_t *cores;       // every core the rollout touches, owned
    int core_count;
    drv_waiters_t *waiters;      // requests waiting for the outcome
};

static void s_touch(drv_rollout_t *self)
{
    self->updated_at = drv_time_wall_ms();
}

static rollout_core_t *s_core(drv_rollout_t *self, int core)
{
    for (int i = 0; i < self->core_count; i++) {
        if (self->cores[i].core == core) {
            return &self->cores[i];
        }
    }
    return NULL;
}

static void s_core_state(drv_rollout_t *self, int core, core_state_t state, const char *fmt, ...)
{
    rollout_core_t *c = s_core(self, core);
    if (!c) {
        return;
    }
    c->state = state;
    if (fmt) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(c->detail, sizeof c->detail, fmt, args);
        va_end(args);
    }
    s_touch(self);
}

drv_rollout_t *drv_rollout_plan(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *group,
                                const char *name, json_t *spec, int64_t step_timeout_secs,
                                int64_t drain_timeout_secs, bool dry_run, bool supervised)
{
    drv_rollout_t *self = calloc(1, sizeof *self);
    self->supervised = supervised;
    snprintf(self->group, sizeof self->group, "%s", group);
    snprintf(self->pipeline, sizeof self->pipeline, "%s", name);
    self->dry_run = dry_run;
    self->started_at = self->updated_at = drv_time_wall_ms();
    self->new_spec = json_incref(spec);
    self->waiters = drv_waiters_new();
    if (step_timeout_secs <= 0) {
        step_timeout_secs = drv_spec_policy(spec, "rollout", "step_timeout_secs");
    }
    if (drain_timeout_secs <= 0) {
        drain_timeout_secs = drv_spec_policy(spec, "rollout", "drain_timeout_secs");
    }
    self->step_timeout_ms = step_timeout_secs * 1000;
    self->drain_timeout_ms = drain_timeout_secs * 1000;
    drv_observed_t observed = {.running = false};
    if (pipeline) {
        observed.running = pipeline->running;
        observed.spec = pipeline->spec;
        observed.generation = pipeline->generation;
        observed.cores = pipeline->cores;
        observed.core_count = pipeline->running ? pipeline->core_count : 0;
        self->old_spec = pipeline->running ? json_incref(pipeline->spec) : NULL;
        self->old_generation = pipeline->generation;
        self->old_running = pipeline->running;
        self->old_core_count = observed.core_count;
        self->old_cores = calloc((size_t)observed.core_count + 1, sizeof *self->old_cores);
        memcpy(self->old_cores, pipeline->cores, sizeof(int) * (size_t)observed.core_count);
    }
    int cores[DRV_MAX_CORES];
    int count = drv_spec_cores(spec, &engine->cpus, cores, DRV_MAX_CORES);
    drv_plan_make(spec, cores, count, &observed, &self->plan);
    if (supervised) {
        drv_plan_starts_first(&self->plan); // every core at once
    }
    //  Every core the rollout touches, with where it comes from and goes to.
    self->cores = calloc(self->plan.count + 1, sizeof *self->cores);
    for (size_t i = 0; i < self->plan.count; i++) {
        const drv_step_t *step = &self->plan.steps[i];
        if (!s_core(self, step->core)) {
            rollout_core_t *c = &self->cores[self->core_count++];
            c->core = step->core;
            bool was = false, will = false;
            for (int k = 0; k < self->old_core_count; k++) {
                was |= self->old_cores[k] == step->core;
            }
            for (int k = 0; k < count; k++) {
                will |= cores[k] == step->core;
            }
            c->previous_generation = was ? self->plan.previous_generation : 0;
            c->target_generation = will ? self->plan.target_generation : 0;
        }
    }
    return self;
}

void drv_rollout_destroy(drv_rollout_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_rollout_t *self = *self_p;
    drv_waiters_destroy(&self->waiters, "the rollout was discarded");
    json_decref(self->new_spec);
    json_decref(self->old_spec);
    drv_plan_clear(&self->plan);
    drv_plan_clear(&self->rollback);
    free(self->cores);
    free(self->old_cores);
    free(self);
    *self_p = NULL;
}

drv_action_t drv_rollout_action(const drv_rollout_t *rollout)
{
    return rollout->plan.action;
}

drv_rollout_state_t drv_rollout_state(const drv_rollout_t *rollout)
{
    return rollout->state;
}

const char *drv_rollout_id(const drv_rollout_t *rollout)
{
    return rollout->id;
}

int64_t drv_rollout_target_generation(const drv_rollout_t *rollout)
{
    return rollout->plan.target_generation;
}

bool drv_rollout_finished(const drv_rollout_t *rollout)
{
    return rollout->state == DRV_RO_SUCCEEDED || rollout->state == DRV_RO_FAILED ||
           rollout->state == DRV_RO_ROLLBACK_FAILED;
}

drv_rollout_t *drv_rollout_find(drv_pipeline_t *pipeline, const char *id)
{
    for (drv_rollout_t *r = zlistx_first(pipeline->rollouts); r; r = zlistx_next(pipeline->rollouts)) {
        if (!strcmp(r->id, id)) {
            return r;
        }
    }
    return NULL;
}

static json_t *s_time(int64_t wall_ms)
{
    char buf[40];
    drv_time_rfc3339(wall_ms, buf, sizeof buf);
    return json_string(buf);
}

static json_t *s_generation(int64_t generation)
{
    return generation > 0 ? json_integer(generation) : json_null();
}

json_t *drv_rollout_json(const drv_rollout_t *self)
{
    json_t *cores = json_array();
    for (int i = 0; i < self->core_count; i++) {
        const rollout_core_t *c = &self->cores[i];
        json_array_append_new(cores, json_pack("{s:i, s:o, s:o, s:s, s:s}", "core", c->core,
                                               "previous_generation", s_generation(c->previous_generation),
                                               "target_generation", s_generation(c->target_generation),
                                               "state", s_core_state_names[c->state], "detail", c->detail));
    }
    json_t *result = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:I, s:o, s:o, s:o, s:o, s:b, s:o, s:o}", "rollout_id",
        self->id[0] ? self->id : "rollout-0", "group", self->group, "pipeline", self->pipeline, "action",
        drv_action_name(self->plan.action), "state", s_state_names[self->state], "target_generation",
        (json_int_t)self->plan.target_generation, "previous_generation",
        s_generation(self->plan.previous_generation), "started_at", s_time(self->started_at),
        "updated_at", s_time(self->updated_at), "failure_reason",
        self->failure_reason[0] ? json_string(self->failure_reason) : json_null(), "dry_run",
        self->dry_run, "plan", drv_plan_to_json(&self->plan), "cores", cores);
    if (self->rollback.count > 0) {
        json_object_set_new(result, "rollback_plan", drv_plan_to_json(&self->rollback));
    }
    json_object_set_new(result, "step", json_integer((json_int_t)self->next));
    return result;
}

static void s_event(drv_engine_t *engine, drv_rollout_t *self)
{
    json_t *fields = json_pack("{s:s, s:s, s:I, s:o}", "rollout_id", self->id, "action",
                               drv_action_name(self->plan.action), "target_generation",
                               (json_int_t)self->plan.target_generation, "failure_reason",
                               self->failure_reason[0] ? json_string(self->failure_reason) : json_null());
    char topic[64];
    snprintf(topic, sizeof topic, "rollout.%s", s_state_names[self->state]);
    drv_events_publish(engine, topic, self->group, self->pipeline, fields);
}

static void s_set_state(drv_engine_t *engine, drv_rollout_t *self, drv_rollout_state_t state)
{
    self->state = state;
    s_touch(self);
    s_event(engine, self);
}

//  A waiting PUT's answer: 200 succeeded, 409 failed, 504 still going.
static void s_outcome(void *arg, bool finished, drv_admin_response_t *response)
{
    drv_rollout_t *self = arg;
    json_t *status = drv_rollout_json(self);
    if (!finished || !drv_rollout_finished(self)) {
        response->status = 504;
        response->json = status;
    } else if (self->state == DRV_RO_SUCCEEDED) {
        response->status = 200;
        response->json = status;
    } else {
        response->status = 409;
        response->json = json_pack("{s:{s:s, s:s}, s:o}", "error", "kind", "conflict", "message",
                                   self->failure_reason, "rollout", status);
    }
}

void drv_rollout_wait(drv_rollout_t *self, drv_admin_request_t *request, int64_t timeout_ms)
{
    drv_waiters_add(self->waiters, request, timeout_ms);
    if (drv_rollout_finished(self)) {
        drv_waiters_answer(self->waiters, true, s_outcome, self);
    }
}

static json_t *s_spec_of(drv_rollout_t *self, int64_t generation)
{
    if (generation == self->plan.target_generation) {
        return self->new_spec;
    }
    return self->old_spec ? self->old_spec : self->new_spec;
}

static void s_commit(drv_engine_t *engine, drv_rollout_t *self, drv_pipeline_t *pipeline)
{
    switch (self->plan.action) {
    case DRV_ACTION_CREATE:
        pipeline->running = true;
        pipeline->generation = self->plan.target_generation;
        break;
    case DRV_ACTION_RESIZE:
        drv_registry_set_spec(engine, pipeline, self->new_spec);
        break;
    case DRV_ACTION_REPLACE:
        json_decref(pipeline->previous_spec);
        pipeline->previous_spec = json_incref(pipeline->spec);
        drv_registry_set_spec(engine, pipeline, self->new_spec);
        pipeline->generation = self->plan.target_generation;
        break;
    case DRV_ACTION_NOOP:
        break;
    }
}

static void s_finish(drv_engine_t *engine, drv_rollout_t *self, drv_pipeline_t *pipeline,
                     drv_rollout_state_t state)
{
    if (state == DRV_RO_SUCCEEDED || self->supervised) {
        s_commit(engine, self, pipeline);
    } else if (self->plan.action == DRV_ACTION_CREATE) {
        pipeline->running = false; // nothing of it runs
    }
    int outcome = state == DRV_RO_SUCCEEDED ? 0 : state == DRV_RO_FAILED ? 1 : 2;
    engine->rollout_counts[self->plan.action][outcome]++;
    s_set_state(engine, self, state);
    pipeline->active = NULL;
    engine->state_dirty = true;
    if (pipeline->has_zmq) {
        drv_broker_pipeline_set(engine, pipeline); // front doors of what runs now
    }
    if (state == DRV_RO_SUCCEEDED) {
        drv_info("rollout succeeded pipeline=%s id=%s action=%s generation=%lld", pipeline->key, self->id,
                 drv_action_name(self->plan.action), (long long)pipeline->generation);
    } else {
        drv_warn("rollout %s pipeline=%s id=%s action=%s reason=\"%s\"", s_state_names[state], pipeline->key,
                 self->id, drv_action_name(self->plan.action), self->failure_reason);
    }
    drv_waiters_answer(self->waiters, true, s_outcome, self);
    //  What stays in the history is the status, not the specs (the pipeline
    //  keeps its current and previous ones): 64 records x every pipeline.
    json_decref(self->new_spec);
    json_decref(self->old_spec);
    self->new_spec = self->old_spec = NULL;
}

static void s_fail(drv_engine_t *engine, drv_rollout_t *self, drv_pipeline_t *pipeline, int core,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void s_fail(drv_engine_t *engine, drv_rollout_t *self, drv_pipeline_t *pipeline, int core,
                   const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(self->failure_reason, sizeof self->failure_reason, fmt, args);
    va_end(args);
    s_core_state(self, core, CORE_FAILED, "%s", self->failure_reason);
    drv_warn("rollout step failed pipeline=%s id=%s reason=\"%s\"; rolling back", pipeline->key, self->id,
             self->failure_reason);
    drv_observed_t observed = {.running = self->old_running,
                               .spec = self->old_spec,
                               .generation = self->old_generation,
                               .cores = self->old_cores,
                               .core_count = self->old_core_count};
    //  The failed step's own start (if any) was done: include it.
    drv_plan_rollback(&self->plan, self->next, &observed, &self->rollback);
    self->rollback_next = 0;
    s_set_state(engine, self, DRV_RO_ROLLING_BACK);
}

typedef enum { STEP_DONE, STEP_WAIT, STEP_FAILED } step_result_t;

//  Carries out one step; on STEP_FAILED, why says what went wrong.
static step_result_t s_step(drv_engine_t *engine, drv_rollout_t *self, drv_pipeline_t *pipeline,
                            const drv_step_t *step, bool rolling_back, char *why, size_t whylen)
{
    int64_t now = drv_time_mono_ms();
    drv_instance_t *inst = drv_registry_find_instance(pipeline, step->core, step->generation);
    switch (step->op) {
    case DRV_OP_START:
        if (!inst) {
            inst = drv_registry_add_instance(engine, pipeline, step->core, step->generation,
                                             s_spec_of(self, step->generation));
            inst->gated = !self->supervised;
            if (inst->has_zmq) {
                drv_broker_pipeline_set(engine, pipeline); // its front doors, if new
            }
            drv_lifecycle_start(engine, inst);
        }
        s_core_state(self, step->core, CORE_STARTING, "starting %s", inst->id);
        if (s_core(self, step->core)) {
            s_core(self, step->core)->started_ms = now;
        }
        return STEP_DONE;
    case DRV_OP_WAIT_READY:
        if (inst && inst->state == DRV_INST_READY) {
            s_core_state(self, step->core, CORE_READY, "%s ready", inst->id);
            self->step_deadline_ms = 0;
            return STEP_DONE;
        }
        //  Each core's gate runs from when its instance was started (creates
        //  start every core at once).
        self->step_deadline_ms =
            (s_core(self, step->core) && s_core(self, step->core)->started_ms ? s_core(self, step->core)->started_ms
                                                                              : now) +
            self->step_timeout_ms;
        bool restarting = inst && inst->state == DRV_INST_FAILED && inst->restart_at_ms > 0;
        if (!inst || (inst->state == DRV_INST_FAILED && !restarting) || inst->state == DRV_INST_EXITED) {
            snprintf(why, whylen, "core %d: generation %lld instance exited before ready: %s", step->core,
                     (long long)step->generation, inst && inst->detail[0] ? inst->detail : "exited");
            return STEP_FAILED;
        }
        if (now >= self->step_deadline_ms) {
            snprintf(why, whylen, "core %d: generation %lld not ready within %lld s%s%s", step->core,
                     (long long)step->generation, (long long)(self->step_timeout_ms / 1000),
                     inst->detail[0] ? ": " : "", inst->detail);
            return STEP_FAILED;
        }
        return STEP_WAIT;
    case DRV_OP_SWITCH:
        s_core_state(self, step->core, rolling_back ? CORE_ROLLED_BACK : CORE_SWITCHED,
                     "served by generation %lld", (long long)step->generation);
        return STEP_DONE;
    case DRV_OP_DRAIN:
    case DRV_OP_STOP:
        if (inst && !inst->retiring) {
            if (!rolling_back) {
                s_core_state(self, step->core, CORE_DRAINING_OLD, "draining %s", inst->id);
            }
            drv_lifecycle_retire(engine, inst, self->drain_timeout_ms); // may remove it at once
        }
        if (drv_registry_find_instance(pipeline, step->core, step->generation)) {
            return STEP_WAIT; // until it has exited
        }
        if (rolling_back) {
            s_core_state(self, step->core, CORE_ROLLED_BACK, "generation %lld stopped",
                         (long long)step->generation);
        } else {
            s_core_state(self, step->core, CORE_RETIRED, "generation %lld retired", (long long)step->generation);
        }
        return STEP_DONE;
    }
    return STEP_WAIT;
}

//  Runs as many steps as can complete now.
static void s_advance(drv_engine_t *engine, drv_rollout_t *self, drv_pipeline_t *pipeline)
{
    char why[300];
    for (int guard = 0; guard < 10000; guard++) {
        bool rolling_back = self->state == DRV_RO_ROLLING_BACK;
        if (!rolling_back && self->state != DRV_RO_RUNNING) {
            return;
        }
        const drv_plan_t *plan = rolling_back ? &self->rollback : &self->plan;
        size_t *next = rolling_back ? &self->rollback_next : &self->next;
        if (*next == plan->count) {
            s_finish(engine, self, pipeline, rolling_back ? DRV_RO_FAILED : DRV_RO_SUCCEEDED);
            return;
        }
        const drv_step_t *step = &plan->steps[*next];
        step_result_t result = s_step(engine, self, pipeline, step, rolling_back, why, sizeof why);
        if (result == STEP_WAIT) {
            return;
        }
        if (result == STEP_FAILED && !rolling_back && self->supervised) {
            //  Keep what runs; the restart policy goes on trying.
            snprintf(self->failure_reason, sizeof self->failure_reason, "%s", why);
            s_core_state(self, step->core, CORE_FAILED, "%s", why);
            s_finish(engine, self, pipeline, DRV_RO_FAILED);
            return;
        }
        if (result == STEP_FAILED && !rolling_back) {
            s_fail(engine, self, pipeline, step->core, "%s", why);
            continue; // undo from here
        }
        if (result == STEP_FAILED) {
            //  Undoing failed: say so, and leave what runs as it is for the operator.
            size_t len = strlen(self->failure_reason);
            snprintf(self->failure_reason + len, sizeof self->failure_reason - len, "; rollback failed: %s", why);
            s_core_state(self, step->core, CORE_FAILED, "rollback could not restore generation %lld",
                         (long long)step->generation);
            s_finish(engine, self, pipeline, DRV_RO_ROLLBACK_FAILED);
            return;
        }
        (*next)++;
        s_touch(self);
    }
}

void drv_rollout_start(drv_engine_t *engine, drv_pipeline_t *pipeline, drv_rollout_t *self)
{
    snprintf(self->id, sizeof self->id, "rollout-%lld", (long long)++engine->next_rollout_id);
    self->owner = pipeline;
    zlistx_add_end(pipeline->rollouts, self);
    while (zlistx_size(pipeline->rollouts) > DRV_ROLLOUT_HISTORY) {
        drv_rollout_t *oldest = zlistx_first(pipeline->rollouts);
        if (oldest == pipeline->active) {
            break;
        }
        zlistx_delete(pipeline->rollouts, zlistx_cursor(pipeline->rollouts));
    }
    pipeline->active = self;
    if (self->plan.action == DRV_ACTION_CREATE) {
        drv_registry_set_spec(engine, pipeline, self->new_spec); // what status shows meanwhile
        pipeline->shut_down = false;
    }
    drv_info("rollout started pipeline=%s id=%s action=%s target_generation=%lld steps=%zu", pipeline->key,
             self->id, drv_action_name(self->plan.action), (long long)self->plan.target_generation,
             self->plan.count);
    s_set_state(engine, self, DRV_RO_RUNNING);
    s_advance(engine, self, pipeline);
}

int64_t drv_rollout_tick(drv_engine_t *engine)
{
    int64_t next = -1;
    int64_t now = drv_time_mono_ms();
    if (!engine->groups) {
        return -1;
    }
    for (drv_group_t *g = zhashx_first(engine->groups); g; g = zhashx_next(engine->groups)) {
        for (drv_pipeline_t *p = zhashx_first(g->pipelines); p; p = zhashx_next(g->pipelines)) {
            for (drv_rollout_t *r = zlistx_first(p->rollouts); r; r = zlistx_next(p->rollouts)) {
                if (drv_waiters_size(r->waiters) > 0) {
                    drv_waiters_answer(r->waiters, false, s_outcome, r); // those whose time is up
                    int64_t wait = drv_waiters_next(r->waiters);
                    next = wait >= 0 && (next < 0 || wait < next) ? wait : next;
                }
            }
            if (p->active) {
                s_advance(engine, p->active, p);
                if (p->active && p->active->step_deadline_ms > 0) {
                    int64_t wait = p->active->step_deadline_ms > now ? p->active->step_deadline_ms - now : 0;
                    next = next < 0 || wait < next ? wait + 1 : next;
                }
            }
        }
    }
    return next;
}

void drv_rollout_abandon_waiters(drv_engine_t *engine)
{
    if (!engine->groups) {
        return;
    }
    for (drv_group_t *g = zhashx_first(engine->groups); g; g = zhashx_next(engine->groups)) {
        for (drv_pipeline_t *p = zhashx_first(g->pipelines); p; p = zhashx_next(g->pipelines)) {
            for (drv_rollout_t *r = zlistx_first(p->rollouts); r; r = zlistx_next(p->rollouts)) {
                drv_waiters_abandon(r->waiters, "droverd is shutting down");
            }
        }
    }
}
