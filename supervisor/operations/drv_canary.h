/*  drv_canary — a canary rollout's hold: what the new generation's cores do
    compared with the old generation's over the same window, and the verdict.

    The hold starts when the plan reaches its hold step (drv_planner.h,
    drv_plan_canary): every instance's counters are noted then. Until
    hold_secs have passed it compares, from the instances' heartbeats:

      error ratio  errors / records in, of each generation's instances
      crashes      restarts of each generation's instances

    A canary instance that crashes more often than the old generation's fails
    the hold at once. At the end of the hold, an error ratio above
    max_error_ratio that is also above the old generation's fails it (a
    canary is not blamed for errors its elders make too); otherwise it
    passes: on to the other cores with auto_promote, else it waits for
    promote. An operator's promote ends the hold at any time. */
#ifndef DRV_CANARY_H
#define DRV_CANARY_H

#include "drv_engine.h"

#include <jansson.h>

typedef struct drv_canary_t drv_canary_t;

//  From the spec's policies.rollout.canary (normalized); NULL when it has none.
drv_canary_t *drv_canary_new(const json_t *spec);
void drv_canary_destroy(drv_canary_t **self_p);
//  How many cores it switches first.
int drv_canary_cores(const drv_canary_t *self);

//  The hold step (drv_effects_t.hold): DRV_EXEC_DONE (pass or promoted),
//  DRV_EXEC_WAIT with *wake_ms, or DRV_EXEC_FAILED with why.
int drv_canary_hold(drv_canary_t *self, drv_pipeline_t *pipeline, int64_t new_generation, int64_t old_generation,
                    int64_t now_ms, int64_t *wake_ms, char *why, size_t whylen);

//  Ends the hold at its next evaluation, as passed (an operator's promote).
void drv_canary_promote(drv_canary_t *self);
//  The hold has passed and waits for promote (auto_promote false).
bool drv_canary_awaiting_promote(const drv_canary_t *self);

//  pending, pass, fail or promoted (a string that lives as long as the program).
const char *drv_canary_verdict(const drv_canary_t *self);
//  The error ratio over the hold so far: of the new generation, or of the old.
double drv_canary_ratio(const drv_canary_t *self, bool fresh);

//  {cores, hold_secs, max_error_ratio, auto_promote, until, error_ratio_new,
//   error_ratio_old, records_new, records_old, crashes_new, crashes_old,
//   verdict: pending|pass|fail|promoted}
json_t *drv_canary_json(const drv_canary_t *self);

#endif
