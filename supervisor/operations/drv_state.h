/*  drv_state — the applied specs, kept in engine.state_file so that an
    operator's runtime changes survive a droverd restart. */
#ifndef DRV_STATE_H
#define DRV_STATE_H

#include "drv_engine.h"

//  Saving the state file; written only here, read by status and metrics.
typedef struct drv_state_saver_t {
    int64_t retry_ms;    // backoff after a failed save (0: the last one worked)
    int64_t retry_at_ms; // mono: not before then
    int64_t failures;    // failed saves since start
    char error[600];     // why the last save failed, "" once one succeeds
} drv_state_saver_t;

drv_state_saver_t *drv_state_saver_new(void);
void drv_state_saver_destroy(drv_state_saver_t **self_p);

//  Writes every group and pipeline (spec, and whether it runs) atomically:
//  temp file, fsync, rename, fsync of the directory. Returns 0, or -1 with
//  the reason in why.
int drv_state_save(drv_engine_t *engine, char *why, size_t whylen);

//  Saves the state when it changed; a failed save keeps it dirty and is
//  retried with backoff (0.5 s doubling to 30 s), reported as the event
//  state.save_failed, in drover_state_save_failures_total and in /readyz.
//  Returns ms until the next retry, or -1.
int64_t drv_state_tick(drv_engine_t *engine);

//  Reads the state file into {g: {p: {spec, running, generation, ...}}}
//  with every spec validated again. NULL when there is none; on a broken file,
//  NULL with the reason in err (droverd then starts from the config file).
//  *config: the hash of each pipeline the config file declared when the
//  file was written, {g: {p: "sha1:..."}} (new reference), or NULL when the
//  state file predates that record.
json_t *drv_state_load(drv_engine_t *engine, json_t **config, char *err, size_t errlen);
//  The same from a document already read (path names it in messages): the
//  state file's, or the one an upgrade hands over (upgrade/drv_handoff.c).
json_t *drv_state_parse(drv_engine_t *engine, const json_t *doc, const char *path, json_t **config, char *err,
                        size_t errlen);
//  What the state file holds, as a document (new reference): every applied
//  spec, the config file's hashes, the rollout ids and history, OpAMP's part.
json_t *drv_state_doc(drv_engine_t *engine);

#endif
