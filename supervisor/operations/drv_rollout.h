/*  drv_rollout — carries out a plan step by step, records each core's state in
    a RolloutStatus, rolls back on failure, and answers the requests waiting
    for it. Driven by the loop when an instance event or a deadline comes
    (drv_operations.h). */
#ifndef DRV_ROLLOUT_H
#define DRV_ROLLOUT_H

#include "drv_engine.h"
#include "drv_op_end.h"
#include "drv_planner.h"

#define DRV_ROLLOUT_HISTORY 32         // rollouts kept per pipeline (docs/operations.md, RolloutStatus)
#define DRV_ROLLOUT_HISTORY_ENTRIES 64 // entries of one rollout's history kept (the newest)
#define DRV_ROLLOUT_SPECS_KEPT 8       // succeeded rollouts per pipeline whose spec a rollback may go back to
#define DRV_ROLLOUTS_DETAILED                                                                                          \
    8 // rollouts per pipeline kept whole (plan, cores, history); older
      // finished ones are kept as a summary (drv_rollout_compact_history)

typedef enum {
    DRV_RO_PENDING = 0,
    DRV_RO_RUNNING,
    DRV_RO_SUCCEEDED,
    DRV_RO_FAILED,
    DRV_RO_ROLLING_BACK,
    DRV_RO_ROLLBACK_FAILED,
    DRV_RO_PAUSED, // an operator's pause, or a canary's hold
} drv_rollout_state_t;

//  How a change is to be carried out.
typedef struct {
    int64_t step_timeout_secs;  // 0: from the spec's rollout policy
    int64_t drain_timeout_secs; // 0: from the spec's rollout policy
    bool dry_run;
    //  Pipelines from the config file when droverd starts: every core starts
    //  at once, instances follow the restart policy instead of failing the
    //  step, and a step that times out ends the rollout failed without
    //  rolling back, so the supervisor keeps trying, as with a Deployment.
    bool supervised;
    bool no_canary;   // a rollback: the spec's canary policy is not applied
    bool instantiate; // dry_run=instantiate: the candidate is also built in a throwaway instance
    bool renew;       // a replace even when the spec is the same (an upgrade's: new binaries)
    //  What asked for it (RolloutStatus `cause`): "apply" (a PUT; NULL),
    //  "rollback" (POST …/rollback, droverctl rollout undo), "config" (the
    //  config file: at start or a reload), "opamp" (a remote config),
    //  "restart" (droverd started again: the state file's spec), "upgrade"
    //  (droverd upgraded in place: every instance onto the new binaries).
    const char *cause;
} drv_rollout_opts_t;

//  What an operator may do to a running rollout.
typedef enum {
    DRV_CONTROL_PAUSE = 0, // after the step under way, begin no other
    DRV_CONTROL_RESUME,    // go on (a canary waiting for promote is promoted)
    DRV_CONTROL_PROMOTE,   // end a canary's hold now, as passed
    DRV_CONTROL_ABORT,     // roll back now (a drain under way completes first)
} drv_control_t;

//  Plans a change to (group, name) without touching anything: the result is a
//  pending rollout (what dry_run returns), not attached to any pipeline.
//  pipeline may be NULL (it does not exist yet).
drv_rollout_t *drv_rollout_plan(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *group, const char *name,
                                json_t *spec, const drv_rollout_opts_t *opts);
//  Attaches a planned rollout to its pipeline (now existing) and starts it.
void drv_rollout_start(drv_engine_t *engine, drv_pipeline_t *pipeline, drv_rollout_t *rollout);
void drv_rollout_destroy(drv_rollout_t **self_p);

//  Its RolloutStatus. The latest finished one's is shared: do not change it.
json_t *drv_rollout_json(const drv_rollout_t *rollout);
drv_action_t drv_rollout_action(const drv_rollout_t *rollout);
drv_rollout_state_t drv_rollout_state(const drv_rollout_t *rollout);
const char *drv_rollout_state_name(drv_rollout_state_t state); // "running", "failed", ...
const char *drv_rollout_id(const drv_rollout_t *rollout);
int64_t drv_rollout_target_generation(const drv_rollout_t *rollout);
bool drv_rollout_finished(const drv_rollout_t *rollout);
//  An operator aborted it (it then ends failed, rolled back).
bool drv_rollout_aborted(const drv_rollout_t *rollout);
drv_rollout_t *drv_rollout_find(drv_pipeline_t *pipeline, const char *id);
//  The spec a succeeded rollout rolled out, while it is kept (the newest
//  DRV_ROLLOUT_SPECS_KEPT succeeded ones), else NULL. Borrowed.
json_t *drv_rollout_spec_kept(const drv_rollout_t *rollout);
//  The spec of the generation it brings (NULL once it finished).
const json_t *drv_rollout_new_spec(const drv_rollout_t *rollout);
//  The pipeline's rollouts, newest first (by number): this run's, whole or
//  as summaries, and those of runs before it that the state file kept
//  (past_rollouts), at most DRV_ROLLOUT_HISTORY. New reference.
json_t *drv_rollout_history(const drv_pipeline_t *pipeline);
//  A past run's rollout by id, or one of this run's kept as a summary: its
//  RolloutStatus without plan, cores and history (new reference), or NULL.
json_t *drv_rollout_find_past(const drv_pipeline_t *pipeline, const char *id);
//  The pipeline's past rollouts are statuses (a state file's, a handoff's;
//  kept as compact summaries, at most DRV_ROLLOUT_HISTORY with this run's).
void drv_rollout_set_past(drv_pipeline_t *pipeline, const json_t *statuses);
//  Keeps whole only the newest DRV_ROLLOUTS_DETAILED rollouts (and those
//  under way or keeping a spec for rollback ?to=); the others become
//  summaries: the history of a pipeline replaced every minute stays small.
void drv_rollout_compact_history(drv_pipeline_t *pipeline);
//  What the state file keeps of the finished rollouts (oldest first, at
//  most DRV_ROLLOUT_HISTORY): their RolloutStatus without plan, cores
//  and history. New reference.
json_t *drv_rollout_history_saved(const drv_pipeline_t *pipeline);

//  fn(arg, how) once the rollout ends, or its record is discarded first
//  (drv_op_end.h); forget stops it. -1 out of memory.
int drv_rollout_on_end(drv_rollout_t *rollout, drv_op_end_fn *fn, void *arg);
void drv_rollout_forget(drv_rollout_t *rollout, void *arg);
//  Why it failed ("" unless it did).
const char *drv_rollout_failure(const drv_rollout_t *rollout);

//  pause, resume, promote or abort, recorded in the rollout's history.
//  Returns 0, or -1 with why when its state does not allow it (a 409).
int drv_rollout_control(drv_engine_t *engine, drv_pipeline_t *pipeline, drv_rollout_t *rollout, drv_control_t what,
                        char *why, size_t whylen);
const char *drv_control_name(drv_control_t what);

//  Runs the pipeline's active rollout as far as it can go now.
void drv_rollout_run(drv_engine_t *engine, drv_pipeline_t *pipeline);
//  Mono ms when the active step fails unless an event comes first (0: none).
int64_t drv_rollout_deadline(const drv_rollout_t *rollout);
//  Ends the pipeline's active rollout failed, as it stands, without rolling
//  back (droverd is stopping: its shutdown takes every instance).
void drv_rollout_abort(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *reason);

#endif
