/*  drv_reload — where pipelines come from: the state file or the config file
    at start, and the config file again on SIGHUP. */
#ifndef DRV_RELOAD_H
#define DRV_RELOAD_H

#include "drv_engine.h"

//  At start: the state file's pipelines if there is one, else the config
//  file's; each comes up as a supervised create.
void drv_reload_start_pipelines(drv_engine_t *engine);

//  SIGHUP (or the file changed, engine.watch_config; why says which, for the
//  log): re-reads the config file and applies each pipeline's difference as a
//  rollout; config pipelines gone from the file are shut down and forgotten.
//  An invalid file changes nothing (logged, and a config.invalid event).
void drv_reload_apply(drv_engine_t *engine, const char *why);

#endif
