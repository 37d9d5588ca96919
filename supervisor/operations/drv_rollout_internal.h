/*  drv_rollout_internal — a rollout's record, shared by drv_rollout.c (the
    RolloutStatus: planning, history, JSON, waiting requests) and
    drv_rollout_steps.c (carrying the plan out). Private to operations/. */
#ifndef DRV_ROLLOUT_INTERNAL_H
#define DRV_ROLLOUT_INTERNAL_H

#include "drv_executor.h"
#include "drv_rollout.h"
#include "drv_op_end.h"

typedef enum {
    CORE_PENDING = 0,
    CORE_STARTING,
    CORE_READY,
    CORE_SWITCHED,
    CORE_DRAINING_OLD,
    CORE_RETIRED,
    CORE_FAILED,
    CORE_ROLLED_BACK,
} core_state_t;

typedef struct {
    int core;
    int64_t previous_generation; // 0: the core was not served before
    int64_t target_generation;   // 0: the core is being given up
    core_state_t state;
    char detail[200];
} rollout_core_t;

struct drv_rollout_t {
    char id[32]; // "rollout-N"
    char group[64];
    char pipeline[64];
    drv_pipeline_t *owner; // set once started
    drv_engine_t *engine;  // where its progress events go
    drv_rollout_state_t state;
    bool dry_run;
    int64_t started_at;      // wall ms
    int64_t started_mono_ms; // for drover_rollout_duration_seconds
    int64_t updated_at;
    char failure_reason[400];
    char cause[16];              // drv_rollout_opts_t's
    bool supervised;             // from the config file: keep trying, never roll back
    struct drv_canary_t *canary; // its hold, when the plan has one (owned)
    bool pause_requested;        // an operator's pause: stop after the step under way
    bool abort_requested;        // an operator's abort: roll back as soon as no drain is under way
    json_t *history;             // [{at, action, detail}]: what operators and the canary did,
                                 // the last DRV_ROLLOUT_HISTORY_ENTRIES
    int64_t history_dropped;     // older entries no longer kept
    drv_plan_t plan;             // what to do
    size_t next;                 // next step of plan (where it failed, once rolling back)
    drv_plan_t rollback;         // what to undo, once failed
    drv_executor_t exec;         // carrying out plan, then rollback
    int64_t step_timeout_ms;
    int64_t drain_timeout_ms;
    json_t *new_spec;     // target generation's spec (released once finished)
    json_t *old_spec;     // previous generation's spec, or NULL (released once finished)
    json_t *spec_changes; // what it changes in the spec ([{path, from, to}], redacted), kept
    json_t *spec_kept;    // once it succeeded, the spec it rolled out, while it is among the
                          // newest DRV_ROLLOUT_SPECS_KEPT that did (rollback ?to=)
    int *old_cores;       // old_core_count of them, owned
    int old_core_count;
    int64_t old_generation;
    bool old_running;
    rollout_core_t *cores; // every core the rollout touches, owned
    int core_count;
    drv_op_listeners_t *on_end; // told when it ends (the admin layer's waiting requests)
    json_t *finished_json;      // its RolloutStatus once finished, while it is the latest (shared)
};

//  The record changed (updated_at).
void drv_rollout_touch(drv_rollout_t *self);
//  The entry of one core, or NULL when the rollout does not touch it.
rollout_core_t *drv_rollout_core(drv_rollout_t *self, int core);
//  Sets a core's state and, when fmt is not NULL, its detail.
void drv_rollout_core_state(drv_rollout_t *self, int core, core_state_t state, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
//  Sets the rollout's state and publishes rollout.<state>.
void drv_rollout_set_state(drv_engine_t *engine, drv_rollout_t *self, drv_rollout_state_t state);
//  Appends {at, action, detail} to the rollout's history.
void drv_rollout_record(drv_rollout_t *self, const char *action, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
//  Begins carrying the plan out (drv_rollout_steps.c).
void drv_rollout_begin(drv_rollout_t *self);
//  Runs as many steps as can complete now (drv_rollout_steps.c).
void drv_rollout_advance(drv_engine_t *engine, drv_rollout_t *self, drv_pipeline_t *pipeline);

#endif
