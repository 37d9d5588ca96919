/*  drv_restore — where pipelines come from when droverd starts: the state
    file (what ran when droverd stopped, with the operator's API changes)
    and the config file (the desired state of the pipelines it names).

    Without a state file, the config file's pipelines are created. With one,
    each pipeline it holds comes back as it was (running or shut down, at
    its generation), except where the config file changed since the state
    file was written (the state file keeps a hash of each pipeline the file
    declared then):
      - an entry whose spec changed, or that is new in the file, is taken
        from the file (a new generation); logged and evented config.changed;
      - an entry gone from the file is not started (as SIGHUP would shut it
        down), logged;
      - an entry unchanged keeps the state file's spec, so a pipeline
        changed only through the API keeps its API spec, and one deleted
        through the API stays deleted.
    A state file written before that record keeps its pipelines as they
    were and the file's other pipelines are not started (as before). */
#ifndef DRV_RESTORE_H
#define DRV_RESTORE_H

#include "drv_engine.h"

//  Each pipeline comes up as a supervised create.
void drv_restore_start_pipelines(drv_engine_t *engine);
//  The config file's spec of (group, name) when its entry changed since
//  config (the hashes the state recorded, {g: {p: hash}}) was written, else
//  NULL (borrowed): what an upgrade applies as a restart would.
json_t *drv_restore_changed_in_file(drv_engine_t *engine, const json_t *config, const char *group, const char *name);

#endif
