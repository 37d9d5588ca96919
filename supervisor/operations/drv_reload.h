/*  drv_reload — the config file applied again on SIGHUP (or when it
    changes, engine.watch_config), and a remote config from OpAMP. Where
    pipelines come from at start is drv_restore.h. */
#ifndef DRV_RELOAD_H
#define DRV_RELOAD_H

#include "drv_engine.h"

//  SIGHUP (or the file changed, engine.watch_config; why says which, for the
//  log): re-reads the config file and applies each pipeline's difference as a
//  rollout; config pipelines gone from the file are shut down and forgotten.
//  An invalid file changes nothing (logged, and a config.invalid event).
void drv_reload_apply(drv_engine_t *engine, const char *why);

//  Applies groups ({group: {pipeline: normalized spec}}) as a reload does:
//  each pipeline's difference is a rollout (admission first: what a PUT
//  would refuse is skipped), the pipelines take source as theirs, and the
//  pipelines of that source groups no longer names are shut down and
//  forgotten. previous: what the source declared before (NULL: unknown);
//  a pipeline the API changed since is left alone while its entry is the
//  same there, as at a restart. Returns {applied: [{group, pipeline,
//  rollout_id}], skipped: [{group, pipeline, reason}], removed: N} (new
//  reference).
json_t *drv_reload_apply_groups(drv_engine_t *engine, const json_t *groups, const json_t *previous,
                                drv_source_t source);

#endif
