/*  drv_rollout_steps — carrying a rollout's plan out with the executor
    (drv_executor.h), and keeping the RolloutStatus of each core as it goes:

      start       the instance of (core, generation) is spawned, gated: if it
                  exits before READY the step fails instead of restarting
      wait_ready  until it is READY (the broker routes to it from then on),
                  failing after step_timeout_secs or if it exits
      switch      the core is now served by the new generation
      drain       the old instance drains (DRAIN marker after its last batch),
                  exports everything and exits; SIGTERM/SIGKILL at drain_timeout
      stop        (rollback) a new instance goes: drained if ready, else stopped
      hold        (canary) until drv_canary.c's verdict; shown as paused

    A failed step turns the rollout to rolling_back, with a plan from the
    planner that gives every core back to the old generation, carried out by
    the same executor; if that fails too, the rollout ends rollback_failed and
    the status shows the mix. An operator's pause stops it between steps
    and an abort rolls it back (drv_rollout_control.c sets the flags that
    drv_rollout_advance reads). */
#include "drv_rollout_internal.h"
#include "drv_apply.h"
#include "drv_canary.h"
#include "drv_registry.h"
#include "drv_listeners.h"
#include "drv_lifecycle.h"
#include "drv_broker_link.h"

#include "drover/drv_log.h"
#include "drover/drv_msg.h"
#include "drover/drv_spec.h"
#include "drover/drv_time.h"

#include <stdio.h>
#include <string.h>

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
    case DRV_ACTION_SHUTDOWN: // not a rollout's (drv_shutdown.c)
    case DRV_ACTION_DELETE:
        break;
    }
}

//  The newest DRV_ROLLOUT_SPECS_KEPT succeeded rollouts keep the spec they
//  rolled out; an older one lets its go.
static void s_keep_spec(drv_pipeline_t *pipeline, drv_rollout_t *self)
{
    self->spec_kept = json_incref(self->new_spec);
    int kept = 0;
    for (drv_rollout_t *r = zlistx_last(pipeline->rollouts); r; r = zlistx_prev(pipeline->rollouts)) {
        if (r->spec_kept && ++kept > DRV_ROLLOUT_SPECS_KEPT) {
            json_decref(r->spec_kept);
            r->spec_kept = NULL;
        }
    }
}

static void s_finish(drv_engine_t *engine, drv_rollout_t *self, drv_pipeline_t *pipeline, drv_rollout_state_t state)
{
    if (state == DRV_RO_SUCCEEDED || self->supervised) {
        s_commit(engine, self, pipeline);
    } else if (self->plan.action == DRV_ACTION_CREATE) {
        pipeline->running = false; // nothing of it runs
    }
    int outcome = state == DRV_RO_SUCCEEDED ? 0 : state == DRV_RO_FAILED ? 1 : 2;
    engine->rollout_counts[self->plan.action][outcome]++;
    drv_histo_observe(&engine->rollout_durations[self->plan.action],
                      (double)(drv_time_mono_ms() - self->started_mono_ms) / 1000.0);
    drv_rollout_set_state(engine, self, state);
    pipeline->active = NULL;
    drv_registry_set_busy(engine, pipeline, false);
    drv_listeners_prune(pipeline); // sockets only a failed or replaced generation needed
    engine->state_dirty = true;
    if (pipeline->has_zmq) {
        drv_broker_pipeline_set(engine, pipeline); // front doors of what runs now
    }
    if (state == DRV_RO_SUCCEEDED) {
        drv_info("rollout succeeded pipeline=%s id=%s action=%s generation=%lld", pipeline->key, self->id,
                 drv_action_name(self->plan.action), (long long)pipeline->generation);
    } else {
        drv_warn("rollout %s pipeline=%s id=%s action=%s reason=\"%s\"", drv_rollout_state_name(state), pipeline->key,
                 self->id, drv_action_name(self->plan.action), self->failure_reason);
    }
    drv_op_listeners_fire(self->on_end, DRV_OP_ENDED); // the requests waiting for it are answered
    //  What stays in the history is the status, not the specs (the pipeline
    //  keeps its current and previous ones, and the newest succeeded
    //  rollouts theirs, for rollback ?to=) nor the executor's bookkeeping:
    //  32 records x every pipeline.
    if (state == DRV_RO_SUCCEEDED && self->plan.action != DRV_ACTION_NOOP) {
        s_keep_spec(pipeline, self);
    }
    json_decref(self->new_spec);
    json_decref(self->old_spec);
    self->new_spec = self->old_spec = NULL;
    drv_executor_end(&self->exec);
    free(self->old_cores);
    self->old_cores = NULL;
    self->old_core_count = 0;
}

static void s_fail(drv_engine_t *engine, drv_rollout_t *self, drv_pipeline_t *pipeline, int core, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void s_fail(drv_engine_t *engine, drv_rollout_t *self, drv_pipeline_t *pipeline, int core, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(self->failure_reason, sizeof self->failure_reason, fmt, args);
    va_end(args);
    drv_rollout_core_state(self, core, CORE_FAILED, "%s", self->failure_reason); // none for core -1 (hold, abort)
    drv_warn("rollout step failed pipeline=%s id=%s reason=\"%s\"; rolling back", pipeline->key, self->id,
             self->failure_reason);
    drv_observed_t observed = {.running = self->old_running,
                               .spec = self->old_spec,
                               .generation = self->old_generation,
                               .cores = self->old_cores,
                               .core_count = self->old_core_count};
    //  The failed step's own start (if any) was done: include it.
    drv_plan_rollback(&self->plan, self->next, &observed, &self->rollback);
    drv_executor_begin(&self->exec, &self->rollback, self->step_timeout_ms);
    drv_rollout_set_state(engine, self, DRV_RO_ROLLING_BACK);
}

//  The RolloutStatus of each core, as the executor reports progress.
static void s_note(void *record, const drv_step_t *step, drv_step_phase_t phase, const drv_slot_view_t *slot)
{
    drv_rollout_t *self = record;
    bool rolling_back = self->state == DRV_RO_ROLLING_BACK;
    switch (step->op) {
    case DRV_OP_START:
        drv_rollout_core_state(self, step->core, CORE_STARTING, "starting %s", slot->id);
        break;
    case DRV_OP_WAIT_READY:
        drv_rollout_core_state(self, step->core, CORE_READY, "%s ready", slot->id);
        break;
    case DRV_OP_SWITCH:
        drv_rollout_core_state(self, step->core, rolling_back ? CORE_ROLLED_BACK : CORE_SWITCHED,
                               "served by generation %lld", (long long)step->generation);
        break;
    case DRV_OP_DRAIN:
    case DRV_OP_STOP:
        if (phase == DRV_STEP_BEGUN && !rolling_back) {
            drv_rollout_core_state(self, step->core, CORE_DRAINING_OLD, "draining %s", slot->id);
        } else if (phase == DRV_STEP_DONE && rolling_back) {
            drv_rollout_core_state(self, step->core, CORE_ROLLED_BACK, "generation %lld stopped",
                                   (long long)step->generation);
        } else if (phase == DRV_STEP_DONE) {
            drv_rollout_core_state(self, step->core, CORE_RETIRED, "generation %lld retired",
                                   (long long)step->generation);
        }
        break;
    default:
        break;
    }
}

//  The hold step: the canary's verdict. A new verdict goes in the history.
static int s_hold(void *record, const drv_step_t *step, int64_t now_ms, int64_t *wake_ms, char *why, size_t whylen)
{
    (void)step;
    drv_rollout_t *self = record;
    if (!self->canary) {
        return DRV_EXEC_DONE;
    }
    const char *was = drv_canary_verdict(self->canary);
    int result = drv_canary_hold(self->canary, self->owner, self->plan.target_generation, self->old_generation, now_ms,
                                 wake_ms, why, whylen);
    const char *is = drv_canary_verdict(self->canary);
    if (was != is) {
        drv_rollout_record(self, "canary", "verdict %s: error ratio %.4f (generation %lld) vs %.4f (generation %lld)",
                           is, drv_canary_ratio(self->canary, true), (long long)self->plan.target_generation,
                           drv_canary_ratio(self->canary, false), (long long)self->old_generation);
        drv_info("canary verdict pipeline=%s id=%s verdict=%s", self->owner->key, self->id, is);
    }
    drv_rollout_touch(self); // its ratios moved
    return result;
}

//  Whether the plan's current step (under way, or next) is op.
static bool s_current_op(const drv_rollout_t *self, drv_op_t op)
{
    return self->exec.next < self->exec.plan->count && self->exec.plan->steps[self->exec.next].op == op;
}

//  running or paused, as what the executor does now says; published when it changes.
static void s_settle(drv_engine_t *engine, drv_rollout_t *self, bool paused)
{
    drv_rollout_state_t state = paused ? DRV_RO_PAUSED : DRV_RO_RUNNING;
    if (self->state != state) {
        drv_rollout_set_state(engine, self, state);
    }
}

void drv_rollout_begin(drv_rollout_t *self)
{
    drv_executor_begin(&self->exec, &self->plan, self->step_timeout_ms);
}

//  Runs as many steps as can complete now.
void drv_rollout_advance(drv_engine_t *engine, drv_rollout_t *self, drv_pipeline_t *pipeline)
{
    drv_apply_t apply = {.engine = engine,
                         .pipeline = pipeline,
                         .target_spec = self->new_spec,
                         .target_generation = self->plan.target_generation,
                         .other_spec = self->old_spec,
                         .gated = !self->supervised,
                         .drain_timeout_ms = self->drain_timeout_ms,
                         .record = self,
                         .note = s_note,
                         .hold = s_hold};
    drv_effects_t fx = drv_apply_effects(&apply);
    for (;;) {
        bool rolling_back = self->state == DRV_RO_ROLLING_BACK;
        if (!rolling_back && self->state != DRV_RO_RUNNING && self->state != DRV_RO_PAUSED) {
            return;
        }
        //  An abort rolls back at once, unless a drain is under way: that
        //  one completes first (its old instance cannot be had back).
        bool draining = self->exec.in_step && (s_current_op(self, DRV_OP_DRAIN) || s_current_op(self, DRV_OP_STOP));
        if (!rolling_back && self->abort_requested && !draining) {
            s_fail(engine, self, pipeline, -1, "aborted by the operator");
            continue;
        }
        self->exec.stop_before_next = !rolling_back && (self->pause_requested || self->abort_requested);
        size_t before = self->exec.next;
        drv_exec_result_t result = drv_executor_run(&self->exec, &fx, drv_time_mono_ms());
        if (!rolling_back) {
            self->next = self->exec.next;
        }
        if (self->exec.next != before) {
            drv_rollout_touch(self);
        }
        if (result == DRV_EXEC_PAUSED && self->abort_requested) {
            continue; // the drain is done: roll back now
        }
        if (result == DRV_EXEC_PAUSED || (result == DRV_EXEC_WAIT && !rolling_back)) {
            //  A canary's hold shows as paused, as an operator's pause does.
            s_settle(engine, self, result == DRV_EXEC_PAUSED || s_current_op(self, DRV_OP_HOLD));
            return;
        }
        if (result == DRV_EXEC_WAIT) {
            return;
        }
        if (result == DRV_EXEC_DONE) {
            s_finish(engine, self, pipeline, rolling_back ? DRV_RO_FAILED : DRV_RO_SUCCEEDED);
            return;
        }
        const drv_step_t *step = &self->exec.plan->steps[self->exec.next];
        const char *why = self->exec.why;
        if (!rolling_back && self->supervised) {
            //  Keep what runs; the restart policy goes on trying.
            snprintf(self->failure_reason, sizeof self->failure_reason, "%s", why);
            drv_rollout_core_state(self, step->core, CORE_FAILED, "%s", why);
            s_finish(engine, self, pipeline, DRV_RO_FAILED);
            return;
        }
        if (!rolling_back) {
            s_fail(engine, self, pipeline, step->core, "%s", why);
            continue; // undo from here
        }
        //  Undoing failed: say so, and leave what runs as it is for the operator.
        size_t len = strlen(self->failure_reason);
        snprintf(self->failure_reason + len, sizeof self->failure_reason - len, "; rollback failed: %s", why);
        drv_rollout_core_state(self, step->core, CORE_FAILED, "rollback could not restore generation %lld",
                               (long long)step->generation);
        s_finish(engine, self, pipeline, DRV_RO_ROLLBACK_FAILED);
        return;
    }
}

void drv_rollout_run(drv_engine_t *engine, drv_pipeline_t *pipeline)
{
    if (pipeline->active) {
        drv_rollout_advance(engine, pipeline->active, pipeline);
    }
}

int64_t drv_rollout_deadline(const drv_rollout_t *self)
{
    return self->exec.deadline_ms;
}

void drv_rollout_abort(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *reason)
{
    drv_rollout_t *self = pipeline->active;
    if (self) {
        snprintf(self->failure_reason, sizeof self->failure_reason, "%s", reason);
        s_finish(engine, self, pipeline, DRV_RO_FAILED);
    }
}

//  ---------------------------------------------------------------- starting

static void s_rollout_free(void **item)
{
    drv_rollout_destroy((drv_rollout_t **)item);
}

void drv_rollout_start(drv_engine_t *engine, drv_pipeline_t *pipeline, drv_rollout_t *self)
{
    snprintf(self->id, sizeof self->id, "rollout-%lld", (long long)++engine->next_rollout_id);
    self->owner = pipeline;
    if (self->plan.target_generation >= pipeline->next_generation) {
        pipeline->next_generation = self->plan.target_generation + 1; // taken, whatever becomes of it
    }
    engine->state_dirty = true;                                // the ids and numbers given out are kept across restarts
    zlistx_set_destructor(pipeline->rollouts, s_rollout_free); // the history owns its rollouts
    drv_rollout_t *previous = zlistx_last(pipeline->rollouts);
    if (previous) {
        json_decref(previous->finished_json); // no longer the latest: built when asked for
        previous->finished_json = NULL;
    }
    zlistx_add_end(pipeline->rollouts, self);
    pipeline->active = self;
    drv_rollout_compact_history(pipeline); // and at most DRV_ROLLOUT_HISTORY kept
    drv_registry_set_busy(engine, pipeline, true);
    if (self->plan.action == DRV_ACTION_CREATE) {
        drv_registry_set_spec(engine, pipeline, self->new_spec); // what status shows meanwhile
        pipeline->shut_down = false;
    }
    drv_info("rollout started pipeline=%s id=%s action=%s target_generation=%lld steps=%zu", pipeline->key, self->id,
             drv_action_name(self->plan.action), (long long)self->plan.target_generation, self->plan.count);
    drv_rollout_set_state(engine, self, DRV_RO_RUNNING);
    drv_rollout_begin(self);
    char why[400];
    if (drv_listeners_open(pipeline, self->new_spec, why, sizeof why) != 0) {
        //  Before any instance is touched: nothing to roll back, and nothing
        //  to commit, even for a pipeline from the config file (its phase
        //  says failed, with why; SIGHUP or a PUT tries again).
        self->supervised = false;
        drv_rollout_abort(engine, pipeline, why);
        return;
    }
    drv_rollout_advance(engine, self, pipeline);
}
