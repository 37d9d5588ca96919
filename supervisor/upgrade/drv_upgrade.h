/*  drv_upgrade — droverd replaced in place by the binaries now on disk
    (docs/operations.md, "Upgrading drover"): checked, executed again with
    the same PID, its state and listening sockets handed over, then every
    pipeline and the broker rolled onto the new binaries. */
#ifndef DRV_UPGRADE_H
#define DRV_UPGRADE_H

#include "drv_engine.h"

drv_upgrade_t *drv_upgrade_new(void);
void drv_upgrade_destroy(drv_upgrade_t **self_p);

//  Asks for an upgrade (by: "api", "SIGUSR2"). 0: the check started; -1:
//  refused now, why says what is in the way (another upgrade, a rollout or
//  shutdown under way, droverd stopping).
int drv_upgrade_request(drv_engine_t *engine, const char *by, char *why, size_t whylen);
//  The reaper's: true when pid was the check's process.
bool drv_upgrade_on_exit(drv_engine_t *engine, pid_t pid, int status);
//  The check's output, for the loop to poll (-1: none).
int drv_upgrade_fd(drv_engine_t *engine);
void drv_upgrade_on_readable(drv_engine_t *engine);
//  Runs what is due: the execution once the check passed; after one, the
//  rollouts once the adopted processes are heard from, and the end.
//  Returns ms until it wants to run again, or -1.
int64_t drv_upgrade_tick(drv_engine_t *engine);
//  After an upgrade, at start: what was handed over becomes the registry
//  (engine->handoff, consumed), and the rollouts are planned.
void drv_upgrade_resume(drv_engine_t *engine);
//  {state, by, from_version, to_version, started_at, finished_at, error,
//  pipelines: [{group, pipeline, rollout_id, state}]}. New reference.
json_t *drv_upgrade_json(drv_engine_t *engine);
const char *drv_upgrade_state_name(drv_upgrade_state_t state);
//  The version the processes adopted from the droverd before the last
//  upgrade run (they are replaced by its rollouts), or this one's.
const char *drv_upgrade_older_version(drv_engine_t *engine);

#endif
