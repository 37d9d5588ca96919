/*  drv_apply — see drv_apply.h. */
#include "drv_apply.h"
#include "drv_registry.h"
#include "drv_lifecycle.h"
#include "drv_broker_link.h"

static drv_slot_view_t s_observe(void *ctx, int core, int64_t generation)
{
    drv_apply_t *self = ctx;
    drv_instance_t *inst = drv_registry_find_instance(self->pipeline, core, generation);
    if (!inst) {
        return (drv_slot_view_t){DRV_SLOT_ABSENT, "", ""};
    }
    drv_slot_state_t state = DRV_SLOT_FAILED;
    if (inst->state == DRV_INST_DRAINING || inst->state == DRV_INST_STOPPING || inst->state == DRV_INST_EXITED) {
        state = DRV_SLOT_STOPPING;
    } else if (inst->state == DRV_INST_STARTING) {
        state = DRV_SLOT_STARTING;
    } else if (inst->state == DRV_INST_READY) {
        state = DRV_SLOT_READY;
    } else if (inst->state == DRV_INST_FAILED && inst->deadline_ms > 0) {
        state = DRV_SLOT_RESTARTING;
    }
    return (drv_slot_view_t){state, inst->id, inst->detail};
}

static void s_start(void *ctx, int core, int64_t generation)
{
    drv_apply_t *self = ctx;
    json_t *spec = generation == self->target_generation || !self->other_spec ? self->target_spec : self->other_spec;
    drv_instance_t *inst = drv_registry_add_instance(self->engine, self->pipeline, core, generation, spec);
    inst->gated = self->gated;
    if (inst->has_zmq) {
        drv_broker_pipeline_set(self->engine, self->pipeline); // its front doors, if new
    }
    drv_lifecycle_start(self->engine, inst);
}

static void s_retire(void *ctx, int core, int64_t generation)
{
    drv_apply_t *self = ctx;
    drv_instance_t *inst = drv_registry_find_instance(self->pipeline, core, generation);
    if (inst) {
        drv_lifecycle_retire(self->engine, inst, self->drain_timeout_ms); // may remove it at once
    }
}

static void s_close(void *ctx)
{
    drv_apply_t *self = ctx;
    if (self->pipeline->has_zmq) {
        drv_broker_pipeline_del(self->engine, self->pipeline);
    }
}

static void s_note(void *ctx, const drv_step_t *step, drv_step_phase_t phase, const drv_slot_view_t *slot)
{
    drv_apply_t *self = ctx;
    if (self->note) {
        self->note(self->record, step, phase, slot);
    }
}

static int s_hold(void *ctx, const drv_step_t *step, int64_t now_ms, int64_t *wake_ms, char *why, size_t whylen)
{
    drv_apply_t *self = ctx;
    return self->hold ? self->hold(self->record, step, now_ms, wake_ms, why, whylen) : DRV_EXEC_DONE;
}

drv_effects_t drv_apply_effects(drv_apply_t *self)
{
    return (drv_effects_t){self, s_observe, s_start, s_retire, s_close, s_note, s_hold};
}
