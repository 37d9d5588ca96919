/*  drv_executor — carries out a plan (drv_planner.h) step by step, for every
    change to a pipeline alike: create, resize, replace, their rollback,
    shutdown, delete and droverd's own stop.

    It touches nothing itself. It reads the slots it needs through an adapter
    and asks the adapter for effects (start, retire, close the front doors);
    the adapter also hears of each step's progress, to keep its own record
    (a RolloutStatus, a ShutdownStatus). So the executor is a pure function of
    (plan, what the adapter shows, now): unit-tested with a fake adapter
    (tests/unit/test_executor.c), driven in droverd by drv_rollout_steps.c
    and drv_shutdown.c with the real instances behind the adapter. */
#ifndef DRV_EXECUTOR_H
#define DRV_EXECUTOR_H

#include "drv_planner.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  An instance slot as the executor sees it.
typedef enum {
    DRV_SLOT_ABSENT = 0, // no such slot (never started, or gone)
    DRV_SLOT_STARTING,   // spawned, not READY yet
    DRV_SLOT_READY,      // READY: routable
    DRV_SLOT_RESTARTING, // crashed, a restart is scheduled
    DRV_SLOT_FAILED,     // crashed and will not restart by itself
    DRV_SLOT_STOPPING,   // retired: draining or stopping, exits soon
} drv_slot_state_t;

typedef struct {
    drv_slot_state_t state;
    const char *id;     // its instance id ("" when absent); valid until the next effect
    const char *detail; // its last failure ("" when none)
} drv_slot_view_t;

typedef enum {
    DRV_STEP_BEGUN = 0, // an effect was asked for (drain/stop/retire): told before it
    DRV_STEP_DONE,      // the step is complete
} drv_step_phase_t;

typedef struct {
    void *ctx;
    drv_slot_view_t (*observe)(void *ctx, int core, int64_t generation);
    void (*start)(void *ctx, int core, int64_t generation);
    //  Drain (or stop, when nothing was routed to it yet); may remove it at once.
    void (*retire)(void *ctx, int core, int64_t generation);
    void (*close)(void *ctx);
    //  Progress, for the adapter's record; slot is the slot as it was then.
    void (*note)(void *ctx, const drv_step_t *step, drv_step_phase_t phase, const drv_slot_view_t *slot);
    //  A hold step (a canary's): DRV_EXEC_DONE to go on, DRV_EXEC_WAIT with
    //  *wake_ms (mono) when to ask again, DRV_EXEC_FAILED with why. NULL: a
    //  hold is done at once.
    int (*hold)(void *ctx, const drv_step_t *step, int64_t now_ms, int64_t *wake_ms, char *why, size_t whylen);
} drv_effects_t;

typedef enum { DRV_EXEC_DONE = 0, DRV_EXEC_WAIT, DRV_EXEC_FAILED, DRV_EXEC_PAUSED } drv_exec_result_t;

typedef struct {
    const drv_plan_t *plan;  // not owned
    size_t next;             // the step under way
    int64_t step_timeout_ms; // how long a wait_ready may take, from its instance's start
    int64_t deadline_ms;     // mono: the current wait_ready fails then (0: none)
    int64_t *started_ms;     // per step: when a start step ran (owned)
    bool in_step;            // plan->steps[next] has begun and not completed
    bool stop_before_next;   // pause: begin no further step (DRV_EXEC_PAUSED between steps)
    char why[300];           // after DRV_EXEC_FAILED: what failed
} drv_executor_t;

//  Sets self to carry out plan from its first step; what it held is freed.
void drv_executor_begin(drv_executor_t *self, const drv_plan_t *plan, int64_t step_timeout_ms);
void drv_executor_end(drv_executor_t *self);

//  Runs as many steps as can complete now. DRV_EXEC_WAIT: call again on an
//  instance event or at deadline_ms; DRV_EXEC_FAILED: plan->steps[next]
//  failed, for the reason in why; DRV_EXEC_DONE: every step is done;
//  DRV_EXEC_PAUSED: stop_before_next is set and no step is under way.
drv_exec_result_t drv_executor_run(drv_executor_t *self, const drv_effects_t *fx, int64_t now_ms);

#endif
