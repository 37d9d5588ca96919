/*  drv_planner — decides what a PUT means and in what order to do it.
    A pure function of (desired spec, observed state): no processes, no I/O.
    Its plan is what the executor carries out and what dry_run shows. */
#ifndef DRV_PLANNER_H
#define DRV_PLANNER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { DRV_ACTION_CREATE = 0, DRV_ACTION_NOOP, DRV_ACTION_RESIZE, DRV_ACTION_REPLACE } drv_action_t;

typedef enum { DRV_OP_START = 0, DRV_OP_WAIT_READY, DRV_OP_SWITCH, DRV_OP_DRAIN, DRV_OP_STOP } drv_op_t;

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
    const int *cores;        // cores it serves, ascending
    int core_count;
} drv_observed_t;

//  Plans the change from observed to (spec, cores), replacing what plan held. Key order never matters:
//  specs are compared by canonical hash.
void drv_plan_make(const json_t *spec, const int *cores, int core_count, const drv_observed_t *observed,
                   drv_plan_t *plan);

//  The plan that undoes a failed one from where it stopped: every core the old
//  generation had is served by it again, the new generation is gone. done is
//  how many steps of plan were carried out.
void drv_plan_rollback(const drv_plan_t *plan, size_t done, const drv_observed_t *observed,
                       drv_plan_t *rollback);

const char *drv_action_name(drv_action_t action);
const char *drv_op_name(drv_op_t op);
json_t *drv_plan_to_json(const drv_plan_t *plan);

#endif
