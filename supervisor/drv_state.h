/*  drv_state — the applied specs, kept in engine.state_file so that an
    operator's runtime changes survive a droverd restart. */
#ifndef DRV_STATE_H
#define DRV_STATE_H

#include "drv_engine.h"

//  Writes every group and pipeline (spec, and whether it runs) atomically:
//  temp file, fsync, rename, fsync of the directory. Returns 0 or -1.
int drv_state_save(drv_engine_t *engine);

//  Reads the state file into {groups: {g: {pipelines: {p: {spec, running}}}}}
//  with every spec validated again. NULL when there is none; on a broken file,
//  NULL with the reason in err (droverd then starts from the config file).
json_t *drv_state_load(drv_engine_t *engine, char *err, size_t errlen);

#endif
