/*  drv_probe_run — dry_run=instantiate: the candidate spec built for real in
    a throwaway instance (drover-worker --probe, worker/drv_probe.h) that is
    then discarded, and the listen endpoints it needs probed (bound, closed).
    Nothing running is touched: the probe gets no traffic, creates no file
    and keeps no socket.

    It runs while droverd's loop waits, for at most DRV_PROBE_TIMEOUT_MS (a
    probe builds nodes, which takes milliseconds; the bound keeps a hanging
    one from stalling the supervisor). */
#ifndef DRV_PROBE_RUN_H
#define DRV_PROBE_RUN_H

#include "drv_engine.h"

#include "drover/drv_problems.h"

#define DRV_PROBE_TIMEOUT_MS 5000

//  Adds what would fail to problems (nothing: the spec would start).
//  pipeline may be NULL (it does not exist yet).
void drv_probe_run(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *group, const char *name,
                   const json_t *spec, int64_t generation, drv_problems_t *problems);

#endif
