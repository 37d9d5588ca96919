/*  drv_planner — decides what a change to a pipeline means and in what order
    to do it: a PUT (create, noop, resize, replace), its rollback, a shutdown
    or a DELETE. A pure function of (desired, observed): no processes, no I/O.
    Its plan is what the executor (drv_executor.h) carries out and what
    dry_run shows. */
#ifndef DRV_PLANNER_H
#define DRV_PLANNER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    DRV_ACTION_CREATE = 0,
    DRV_ACTION_NOOP,
    DRV_ACTION_RESIZE,
    DRV_ACTION_REPLACE,  // the rollout actions end here (RolloutStatus.action)
    DRV_ACTION_SHUTDOWN, // stop every instance, keep the pipeline
    DRV_ACTION_DELETE,   // stop every instance, then forget the pipeline
} drv_action_t;
#define DRV_ROLLOUT_ACTIONS (DRV_ACTION_REPLACE + 1)

typedef enum {
    DRV_OP_START = 0,  // spawn the instance of (core, generation)
    DRV_OP_WAIT_READY, // until it is READY (health-gated, with a deadline)
    DRV_OP_SWITCH,     // the core is served by that generation
    DRV_OP_DRAIN,      // drain it and wait until it has exited
    DRV_OP_STOP,       // (rollback) stop it and wait until it has exited
    DRV_OP_CLOSE,      // close the pipeline's front doors (core -1)
    DRV_OP_RETIRE,     // ask it to drain, without waiting: every core at once
    DRV_OP_WAIT_GONE,  // until it has exited
    DRV_OP_HOLD,       // (canary) until the canary's verdict: pass goes on, fail rolls back (core -1)
} drv_op_t;

//  One instance slot that exists: what a shutdown stops.
typedef struct {
    int core;
    int64_t generation;
} drv_slot_t;

typedef struct {
    drv_op_t op;
    int core;
    int64_t generation;
} drv_step_t;

typedef struct {
    drv_action_t action;
    int64_t target_generation;
    int64_t previous_generation; // 0 when there is none (create)
    drv_step_t *steps;           // count of them, owned (sized to the plan, not the worst case)
    size_t count;
    size_t capacity;
} drv_plan_t;

//  Frees a plan's steps; it is then empty. A plan starts zeroed.
void drv_plan_clear(drv_plan_t *plan);

//  Moves every start step first, keeping the order otherwise: a supervised
//  create (from the config file) starts every core at once.
void drv_plan_starts_first(drv_plan_t *plan);

typedef struct {
    bool running;            // a generation is serving (false: none, or shut down)
    const json_t *spec;      // its normalized spec
    int64_t generation;      // its number (the last one, even when not running)
    int64_t next_generation; // what a new generation is numbered: past every number used, a failed
                             // rollout's too (0: generation + 1)
    const int *cores;        // cores it serves, ascending
    int core_count;
    bool renew; // its processes must be replaced even with the same spec (an upgrade: they
                // run the binaries that were replaced on disk)
} drv_observed_t;

//  Plans the change from observed to (spec, cores), replacing what plan held. Key order never matters:
//  specs are compared by canonical hash.
void drv_plan_make(const json_t *spec, const int *cores, int core_count, const drv_observed_t *observed,
                   drv_plan_t *plan);

//  Turns a replace plan into a canary one: the first canary_cores cores
//  (kept cores first) are switched to the new generation, then a hold step,
//  then the rest as before. When no core of the old generation would be left
//  serving beside the canary (a one-core pipeline), the canary overlaps: its
//  cores' old instances keep serving beside the new ones during the hold and
//  drain after it. Any other plan is left as it is.
void drv_plan_canary(drv_plan_t *plan, const int *cores, int core_count, const drv_observed_t *observed,
                     int canary_cores);

//  The plan that undoes a failed one from where it stopped: every core the old
//  generation had is served by it again, the new generation is gone. done is
//  how many steps of plan were carried out.
void drv_plan_rollback(const drv_plan_t *plan, size_t done, const drv_observed_t *observed, drv_plan_t *rollback);

//  The plan that stops every slot: close the front doors, retire every
//  instance at once, then wait for each to exit. forget: a DELETE.
void drv_plan_shutdown(const drv_slot_t *slots, size_t count, int64_t generation, bool forget, drv_plan_t *plan);

const char *drv_action_name(drv_action_t action);
const char *drv_op_name(drv_op_t op);
json_t *drv_plan_to_json(const drv_plan_t *plan);

#endif
