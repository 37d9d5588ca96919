/*  drv_apply — the executor's adapter onto one pipeline's real instances: it
    shows a slot as the executor sees it (drv_slot_view_t) and applies the
    effects it asks for through the instances layer (start, retire) and the
    broker link (close the front doors). Progress goes to the operation's
    record through note. */
#ifndef DRV_APPLY_H
#define DRV_APPLY_H

#include "drv_engine.h"
#include "drv_executor.h"

typedef struct {
    drv_engine_t *engine;
    drv_pipeline_t *pipeline;
    json_t *target_spec; // the spec of target_generation's instances
    int64_t target_generation;
    json_t *other_spec; // the spec of any other generation's (rollback), or NULL
    bool gated;         // an instance that exits before READY fails its step (no restart)
    int64_t drain_timeout_ms;
    void *record; // the operation's record, for note
    void (*note)(void *record, const drv_step_t *step, drv_step_phase_t phase, const drv_slot_view_t *slot);
    //  A hold step's verdict (drv_effects_t.hold), or NULL.
    int (*hold)(void *record, const drv_step_t *step, int64_t now_ms, int64_t *wake_ms, char *why, size_t whylen);
} drv_apply_t;

//  The effects of self, for drv_executor_run (self must outlive its use).
drv_effects_t drv_apply_effects(drv_apply_t *self);

#endif
