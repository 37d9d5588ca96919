/*  drv_executor — see drv_executor.h. Each op, as carried out:

      start       the slot is started unless it exists; its start time is
                  the base of its wait_ready deadline
      wait_ready  done when READY; fails when the slot is gone or failed for
                  good (a scheduled restart is waited for), or at the deadline
      switch      done (the adapter records who serves the core)
      drain/stop  retired unless already stopping; done once it is gone
      close       the front doors close; done
      retire      retired unless already stopping; done at once
      wait_gone   done once it is gone
      hold        the adapter's hold decides (a canary's verdict)

    Pausing (stop_before_next) lets the step under way complete and begins
    no further one. */
#include "drv_executor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void drv_executor_begin(drv_executor_t *self, const drv_plan_t *plan, int64_t step_timeout_ms)
{
    free(self->started_ms);
    memset(self, 0, sizeof *self);
    self->plan = plan;
    self->step_timeout_ms = step_timeout_ms;
    self->started_ms = calloc(plan->count + 1, sizeof *self->started_ms);
    if (!self->started_ms) {
        abort(); // one number per step of a plan
    }
}

void drv_executor_end(drv_executor_t *self)
{
    free(self->started_ms);
    memset(self, 0, sizeof *self);
}

//  When the slot of step i was started by this plan (0: not by it).
static int64_t s_started(const drv_executor_t *self, size_t i)
{
    const drv_step_t *wait = &self->plan->steps[i];
    for (size_t k = i; k-- > 0;) {
        const drv_step_t *step = &self->plan->steps[k];
        if (step->op == DRV_OP_START && step->core == wait->core && step->generation == wait->generation) {
            return self->started_ms[k];
        }
    }
    return 0;
}

static drv_exec_result_t s_wait_ready(drv_executor_t *self, const drv_effects_t *fx, const drv_step_t *step,
                                      const drv_slot_view_t *slot, int64_t now)
{
    if (slot->state == DRV_SLOT_READY) {
        fx->note(fx->ctx, step, DRV_STEP_DONE, slot);
        self->deadline_ms = 0;
        return DRV_EXEC_DONE;
    }
    if (self->deadline_ms == 0) {
        //  Each core's gate runs from when its instance was started (a
        //  create starts every core at once, then waits for each).
        int64_t started = s_started(self, self->next);
        self->deadline_ms = (started > 0 ? started : now) + self->step_timeout_ms;
    }
    if (slot->state == DRV_SLOT_ABSENT || slot->state == DRV_SLOT_FAILED || slot->state == DRV_SLOT_STOPPING) {
        snprintf(self->why, sizeof self->why, "core %d: generation %lld instance exited before ready: %s", step->core,
                 (long long)step->generation, slot->detail[0] ? slot->detail : "exited");
        return DRV_EXEC_FAILED;
    }
    if (now >= self->deadline_ms) {
        snprintf(self->why, sizeof self->why, "core %d: generation %lld not ready within %lld s%s%s", step->core,
                 (long long)step->generation, (long long)(self->step_timeout_ms / 1000), slot->detail[0] ? ": " : "",
                 slot->detail);
        return DRV_EXEC_FAILED;
    }
    return DRV_EXEC_WAIT;
}

//  Retires the slot unless it is gone or already stopping.
static void s_retire(const drv_effects_t *fx, const drv_step_t *step, const drv_slot_view_t *slot)
{
    if (slot->state != DRV_SLOT_ABSENT && slot->state != DRV_SLOT_STOPPING) {
        fx->note(fx->ctx, step, DRV_STEP_BEGUN, slot);
        fx->retire(fx->ctx, step->core, step->generation);
    }
}

//  Done once the slot is gone.
static drv_exec_result_t s_gone(const drv_effects_t *fx, const drv_step_t *step)
{
    drv_slot_view_t slot = fx->observe(fx->ctx, step->core, step->generation);
    if (slot.state != DRV_SLOT_ABSENT) {
        return DRV_EXEC_WAIT;
    }
    fx->note(fx->ctx, step, DRV_STEP_DONE, &slot);
    return DRV_EXEC_DONE;
}

static drv_exec_result_t s_hold(drv_executor_t *self, const drv_effects_t *fx, const drv_step_t *step,
                                const drv_slot_view_t *slot, int64_t now)
{
    int64_t wake = 0;
    int result = fx->hold ? fx->hold(fx->ctx, step, now, &wake, self->why, sizeof self->why) : DRV_EXEC_DONE;
    if (result == DRV_EXEC_WAIT) {
        self->deadline_ms = wake;
        return DRV_EXEC_WAIT;
    }
    self->deadline_ms = 0;
    if (result == DRV_EXEC_DONE) {
        fx->note(fx->ctx, step, DRV_STEP_DONE, slot);
    }
    return result == DRV_EXEC_DONE ? DRV_EXEC_DONE : DRV_EXEC_FAILED;
}

//  One step: DRV_EXEC_DONE when it completed.
static drv_exec_result_t s_step(drv_executor_t *self, const drv_effects_t *fx, const drv_step_t *step, int64_t now)
{
    drv_slot_view_t slot = fx->observe(fx->ctx, step->core, step->generation);
    switch (step->op) {
    case DRV_OP_START:
        if (slot.state == DRV_SLOT_ABSENT) {
            fx->start(fx->ctx, step->core, step->generation);
            slot = fx->observe(fx->ctx, step->core, step->generation);
        }
        self->started_ms[self->next] = now;
        fx->note(fx->ctx, step, DRV_STEP_DONE, &slot);
        return DRV_EXEC_DONE;
    case DRV_OP_WAIT_READY:
        return s_wait_ready(self, fx, step, &slot, now);
    case DRV_OP_SWITCH:
        fx->note(fx->ctx, step, DRV_STEP_DONE, &slot);
        return DRV_EXEC_DONE;
    case DRV_OP_DRAIN:
    case DRV_OP_STOP:
        s_retire(fx, step, &slot);
        return s_gone(fx, step);
    case DRV_OP_CLOSE:
        fx->close(fx->ctx);
        fx->note(fx->ctx, step, DRV_STEP_DONE, &slot);
        return DRV_EXEC_DONE;
    case DRV_OP_RETIRE:
        s_retire(fx, step, &slot);
        return DRV_EXEC_DONE;
    case DRV_OP_WAIT_GONE:
        return s_gone(fx, step);
    case DRV_OP_HOLD:
        return s_hold(self, fx, step, &slot, now);
    }
    return DRV_EXEC_WAIT;
}

drv_exec_result_t drv_executor_run(drv_executor_t *self, const drv_effects_t *fx, int64_t now_ms)
{
    self->why[0] = 0;
    while (self->next < self->plan->count) {
        if (self->stop_before_next && !self->in_step) {
            return DRV_EXEC_PAUSED;
        }
        drv_exec_result_t result = s_step(self, fx, &self->plan->steps[self->next], now_ms);
        self->in_step = result == DRV_EXEC_WAIT;
        if (result != DRV_EXEC_DONE) {
            return result;
        }
        self->next++;
    }
    return DRV_EXEC_DONE;
}
