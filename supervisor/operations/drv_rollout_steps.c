/*  drv_rollout_steps — carrying a rollout's plan out. It walks its plan:

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
#include "drv_rollout_internal.h"
#include "drv_registry.h"
#include "drv_lifecycle.h"
#include "drv_broker_link.h"

#include "drover/drv_log.h"
#include "drover/drv_msg.h"
#include "drover/drv_spec.h"
#include "drover/drv_time.h"

#include <stdio.h>
#include <string.h>

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
    drv_rollout_set_state(engine, self, state);
    pipeline->active = NULL;
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
    drv_waiters_answer(self->waiters, true, drv_rollout_outcome, self);
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
    drv_rollout_core_state(self, core, CORE_FAILED, "%s", self->failure_reason);
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
    drv_rollout_set_state(engine, self, DRV_RO_ROLLING_BACK);
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
        drv_rollout_core_state(self, step->core, CORE_STARTING, "starting %s", inst->id);
        if (drv_rollout_core(self, step->core)) {
            drv_rollout_core(self, step->core)->started_ms = now;
        }
        return STEP_DONE;
    case DRV_OP_WAIT_READY:
        if (inst && inst->state == DRV_INST_READY) {
            drv_rollout_core_state(self, step->core, CORE_READY, "%s ready", inst->id);
            self->step_deadline_ms = 0;
            return STEP_DONE;
        }
        //  Each core's gate runs from when its instance was started (creates
        //  start every core at once).
        self->step_deadline_ms =
            (drv_rollout_core(self, step->core) && drv_rollout_core(self, step->core)->started_ms ? drv_rollout_core(self, step->core)->started_ms
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
        drv_rollout_core_state(self, step->core, rolling_back ? CORE_ROLLED_BACK : CORE_SWITCHED,
                     "served by generation %lld", (long long)step->generation);
        return STEP_DONE;
    case DRV_OP_DRAIN:
    case DRV_OP_STOP:
        if (inst && !inst->retiring) {
            if (!rolling_back) {
                drv_rollout_core_state(self, step->core, CORE_DRAINING_OLD, "draining %s", inst->id);
            }
            drv_lifecycle_retire(engine, inst, self->drain_timeout_ms); // may remove it at once
        }
        if (drv_registry_find_instance(pipeline, step->core, step->generation)) {
            return STEP_WAIT; // until it has exited
        }
        if (rolling_back) {
            drv_rollout_core_state(self, step->core, CORE_ROLLED_BACK, "generation %lld stopped",
                         (long long)step->generation);
        } else {
            drv_rollout_core_state(self, step->core, CORE_RETIRED, "generation %lld retired", (long long)step->generation);
        }
        return STEP_DONE;
    }
    return STEP_WAIT;
}

//  Runs as many steps as can complete now.
void drv_rollout_advance(drv_engine_t *engine, drv_rollout_t *self, drv_pipeline_t *pipeline)
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
            drv_rollout_core_state(self, step->core, CORE_FAILED, "%s", why);
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
            drv_rollout_core_state(self, step->core, CORE_FAILED, "rollback could not restore generation %lld",
                         (long long)step->generation);
            s_finish(engine, self, pipeline, DRV_RO_ROLLBACK_FAILED);
            return;
        }
        (*next)++;
        drv_rollout_touch(self);
    }
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
                    drv_waiters_answer(r->waiters, false, drv_rollout_outcome, r); // those whose time is up
                    int64_t wait = drv_waiters_next(r->waiters);
                    next = wait >= 0 && (next < 0 || wait < next) ? wait : next;
                }
            }
            if (p->active) {
                drv_rollout_advance(engine, p->active, p);
                if (p->active && p->active->step_deadline_ms > 0) {
                    int64_t wait = p->active->step_deadline_ms > now ? p->active->step_deadline_ms - now : 0;
                    next = next < 0 || wait < next ? wait + 1 : next;
                }
            }
        }
    }
    return next;
}
