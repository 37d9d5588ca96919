/*  drv_rollout — a rollout as a record: planned (what dry_run shows), kept
    in its pipeline's history, shown as a RolloutStatus, and answering the
    requests that wait for it. How it starts and how its plan is carried
    out is drv_rollout_steps.c, which calls into this file and never the
    other way. */
#include "drv_rollout_internal.h"
#include "drv_canary.h"
#include "drv_registry.h"
#include "drv_listeners.h"
#include "drv_events.h"

#include "drover/drv_log.h"
#include "drover/drv_spec.h"
#include "drover/drv_time.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *s_core_state_names[] = {"pending",      "starting", "ready",  "switched",
                                           "draining_old", "retired",  "failed", "rolled_back"};
static const char *s_state_names[] = {"pending",      "running",         "succeeded", "failed",
                                      "rolling_back", "rollback_failed", "paused"};

void drv_rollout_touch(drv_rollout_t *self)
{
    self->updated_at = drv_time_wall_ms();
    if (self->engine && self->owner && !self->dry_run) {
        drv_registry_touch(self->engine, self->owner);
    }
}

rollout_core_t *drv_rollout_core(drv_rollout_t *self, int core)
{
    for (int i = 0; i < self->core_count; i++) {
        if (self->cores[i].core == core) {
            return &self->cores[i];
        }
    }
    return NULL;
}

void drv_rollout_core_state(drv_rollout_t *self, int core, core_state_t state, const char *fmt, ...)
{
    rollout_core_t *c = drv_rollout_core(self, core);
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
    drv_rollout_touch(self);
    if (self->engine && !self->dry_run) {
        //  Core by core, as it happens: what the console draws a rollout from.
        drv_events_publish(self->engine, "rollout.progress", self->group, self->pipeline,
                           json_pack("{s:s, s:s, s:i, s:s, s:s, s:I, s:o}", "rollout_id", self->id, "action",
                                     drv_action_name(self->plan.action), "core", core, "state",
                                     s_core_state_names[state], "detail", c->detail, "target_generation",
                                     (json_int_t)self->plan.target_generation, "previous_generation",
                                     self->old_generation > 0 ? json_integer(self->old_generation) : json_null()));
    }
}

drv_rollout_t *drv_rollout_plan(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *group, const char *name,
                                json_t *spec, const drv_rollout_opts_t *opts)
{
    drv_rollout_t *self = calloc(1, sizeof *self);
    bool supervised = opts->supervised, dry_run = opts->dry_run;
    int64_t step_timeout_secs = opts->step_timeout_secs, drain_timeout_secs = opts->drain_timeout_secs;
    self->engine = engine;
    self->supervised = supervised;
    self->history = json_array();
    snprintf(self->group, sizeof self->group, "%s", group);
    snprintf(self->pipeline, sizeof self->pipeline, "%s", name);
    self->dry_run = dry_run;
    self->started_at = self->updated_at = drv_time_wall_ms();
    self->started_mono_ms = drv_time_mono_ms();
    self->new_spec = json_incref(spec);
    self->on_end = drv_op_listeners_new();
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
        observed.next_generation = pipeline->next_generation;
        observed.cores = pipeline->cores;
        observed.core_count = pipeline->running ? pipeline->core_count : 0;
        observed.renew = opts->renew;
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
    snprintf(self->cause, sizeof self->cause, "%s", opts->cause ? opts->cause : "apply");
    if (self->old_spec) {
        //  Shown to every reader: secrets are redacted before they are compared.
        json_t *before = drv_spec_redact(self->old_spec), *after = drv_spec_redact(spec);
        self->spec_changes = drv_spec_diff(before, after, 64);
        json_decref(before);
        json_decref(after);
    }
    if (supervised) {
        drv_plan_starts_first(&self->plan); // every core at once
    } else if (!opts->no_canary && self->plan.action == DRV_ACTION_REPLACE) {
        self->canary = drv_canary_new(spec);
        if (self->canary) {
            drv_plan_canary(&self->plan, cores, count, &observed, drv_canary_cores(self->canary));
        }
    }
    //  Every core the rollout touches, with where it comes from and goes to.
    self->cores = calloc(self->plan.count + 1, sizeof *self->cores);
    for (size_t i = 0; i < self->plan.count; i++) {
        const drv_step_t *step = &self->plan.steps[i];
        if (step->core >= 0 && !drv_rollout_core(self, step->core)) {
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
    //  Sized to the cores it touches (a plan has a few steps per core).
    rollout_core_t *fitted = realloc(self->cores, ((size_t)self->core_count + 1) * sizeof *self->cores);
    self->cores = fitted ? fitted : self->cores;
    return self;
}

void drv_rollout_destroy(drv_rollout_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_rollout_t *self = *self_p;
    drv_op_listeners_destroy(&self->on_end); // DRV_OP_DISCARDED to whoever still waits
    drv_canary_destroy(&self->canary);
    json_decref(self->history);
    json_decref(self->finished_json);
    json_decref(self->new_spec);
    json_decref(self->old_spec);
    json_decref(self->spec_changes);
    json_decref(self->spec_kept);
    drv_executor_end(&self->exec);
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

bool drv_rollout_aborted(const drv_rollout_t *rollout)
{
    return rollout->abort_requested;
}

json_t *drv_rollout_spec_kept(const drv_rollout_t *rollout)
{
    return rollout->spec_kept;
}

const json_t *drv_rollout_new_spec(const drv_rollout_t *rollout)
{
    return rollout->new_spec;
}

drv_rollout_t *drv_rollout_find(drv_pipeline_t *pipeline, const char *id)
{
    if (!pipeline->rollouts) {
        return NULL;
    }
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

void drv_rollout_record(drv_rollout_t *self, const char *action, const char *fmt, ...)
{
    char detail[400];
    va_list args;
    va_start(args, fmt);
    vsnprintf(detail, sizeof detail, fmt, args);
    va_end(args);
    json_array_append_new(self->history, json_pack("{s:o, s:s, s:s}", "at", s_time(drv_time_wall_ms()), "action",
                                                   action, "detail", detail));
    if (json_array_size(self->history) > DRV_ROLLOUT_HISTORY_ENTRIES) {
        json_array_remove(self->history, 0); // an operator pressing pause 4,000 times grows nothing
        self->history_dropped++;
    }
    drv_rollout_touch(self);
}

static json_t *s_generation(int64_t generation)
{
    return generation > 0 ? json_integer(generation) : json_null();
}

static json_t *s_json(const drv_rollout_t *self);

json_t *drv_rollout_json(const drv_rollout_t *self)
{
    //  A finished rollout never changes: the latest one's status (in every
    //  pipeline's PipelineStatus, so in every /status) is built once.
    bool latest = self->owner && zlistx_tail(self->owner->rollouts) == self; // tail: callers may be walking the list
    if (!drv_rollout_finished(self) || !latest) {
        return s_json(self);
    }
    drv_rollout_t *mutable = (drv_rollout_t *)self;
    if (!mutable->finished_json) {
        mutable->finished_json = s_json(self);
    }
    return json_incref(mutable->finished_json);
}

static json_t *s_json(const drv_rollout_t *self)
{
    json_t *cores = json_array();
    for (int i = 0; i < self->core_count; i++) {
        const rollout_core_t *c = &self->cores[i];
        json_array_append_new(cores, json_pack("{s:i, s:o, s:o, s:s, s:s}", "core", c->core, "previous_generation",
                                               s_generation(c->previous_generation), "target_generation",
                                               s_generation(c->target_generation), "state",
                                               s_core_state_names[c->state], "detail", c->detail));
    }
    json_t *result = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:o, s:o, s:o, s:o, s:b, s:o, s:o}", "rollout_id",
                               self->id[0] ? self->id : "rollout-0", "group", self->group, "pipeline", self->pipeline,
                               "action", drv_action_name(self->plan.action), "state", s_state_names[self->state],
                               "target_generation", (json_int_t)self->plan.target_generation, "previous_generation",
                               s_generation(self->plan.previous_generation), "started_at", s_time(self->started_at),
                               "updated_at", s_time(self->updated_at), "failure_reason",
                               self->failure_reason[0] ? json_string(self->failure_reason) : json_null(), "dry_run",
                               self->dry_run, "plan", drv_plan_to_json(&self->plan), "cores", cores);
    if (self->rollback.count > 0) {
        json_object_set_new(result, "rollback_plan", drv_plan_to_json(&self->rollback));
    }
    if (self->canary) {
        json_object_set_new(result, "canary", drv_canary_json(self->canary));
    }
    json_object_set_new(result, "cause", json_string(self->cause[0] ? self->cause : "apply"));
    if (self->spec_changes) {
        json_object_set(result, "changes", self->spec_changes);
    }
    json_object_set_new(result, "pause_requested", json_boolean(self->pause_requested));
    //  Who holds a paused rollout: an operator's pause, or the canary's hold
    //  (which ends by itself at its verdict; docs/operations.md, "Canary").
    if (self->state == DRV_RO_PAUSED) {
        bool holding = self->canary && self->exec.next < self->plan.count &&
                       self->plan.steps[self->exec.next].op == DRV_OP_HOLD &&
                       !strcmp(drv_canary_verdict(self->canary), "pending");
        json_object_set_new(result, "paused_by",
                            json_string(holding || !self->pause_requested ? "canary" : "operator"));
    }
    json_object_set_new(result, "aborted", json_boolean(self->abort_requested));
    json_object_set_new(result, "history", json_deep_copy(self->history));
    json_object_set_new(result, "history_dropped", json_integer((json_int_t)self->history_dropped));
    json_object_set_new(result, "step", json_integer((json_int_t)self->next));
    return result;
}

const char *drv_rollout_state_name(drv_rollout_state_t state)
{
    return s_state_names[state];
}

static void s_event(drv_engine_t *engine, drv_rollout_t *self)
{
    json_t *fields =
        json_pack("{s:s, s:s, s:I, s:o}", "rollout_id", self->id, "action", drv_action_name(self->plan.action),
                  "target_generation", (json_int_t)self->plan.target_generation, "failure_reason",
                  self->failure_reason[0] ? json_string(self->failure_reason) : json_null());
    char topic[64];
    snprintf(topic, sizeof topic, "rollout.%s", s_state_names[self->state]);
    drv_events_publish(engine, topic, self->group, self->pipeline, fields);
}

void drv_rollout_set_state(drv_engine_t *engine, drv_rollout_t *self, drv_rollout_state_t state)
{
    self->state = state;
    engine->state_dirty = true; // the state file notes a change under way (drv_state.c)
    drv_rollout_touch(self);
    s_event(engine, self);
}

int drv_rollout_on_end(drv_rollout_t *self, drv_op_end_fn *fn, void *arg)
{
    return self->on_end ? drv_op_listeners_add(self->on_end, fn, arg) : -1;
}

void drv_rollout_forget(drv_rollout_t *self, void *arg)
{
    if (self->on_end) {
        drv_op_listeners_remove(self->on_end, arg);
    }
}

const char *drv_rollout_failure(const drv_rollout_t *self)
{
    return self->failure_reason;
}
