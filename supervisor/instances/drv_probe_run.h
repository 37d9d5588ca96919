/*  drv_probe_run — dry_run=instantiate: the candidate spec built for real in
    a throwaway instance (drover-worker --probe, worker/drv_probe.h) that is
    then discarded, and the listen endpoints it needs probed (bound, closed).
    Nothing running is touched: the probe gets no traffic, creates no file
    and keeps no socket.

    The probe is a child that droverd's loop watches like any other event
    source: its spec goes in through a memory file (no write that could
    block), its answer comes out of a non-blocking pipe read as it arrives,
    and a probe past DRV_PROBE_TIMEOUT_MS (a script's top level that loops,
    a file that is a FIFO) is killed. droverd never waits for one, so
    probes, heartbeats and running pipelines never wait for each other. */
#ifndef DRV_PROBE_RUN_H
#define DRV_PROBE_RUN_H

#include "drv_engine.h"

#include "drover/drv_problems.h"

#include <zmq.h>

#define DRV_PROBE_TIMEOUT_MS 5000
#define DRV_PROBE_MAX 4 // probes at once; more are refused until one ends

//  Called once per probe from the loop: problems holds what would fail
//  (none: the spec would start), or is NULL when droverd stopped first.
typedef void(drv_probe_done_fn)(drv_engine_t *engine, void *arg, drv_problems_t *problems);

//  Starts a probe of spec. pipeline may be NULL (it does not exist yet).
//  Returns 0 (done will be called), or -1 with the reason in why when
//  DRV_PROBE_MAX run already or the probe cannot be started.
int drv_probe_run_start(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *group, const char *name,
                        const json_t *spec, int64_t generation, drv_probe_done_fn *done, void *arg, char *why,
                        size_t whylen);

//  The loop's part: ms until the next probe deadline (-1: none), killing
//  the probes past theirs; their answer pipes to poll (at most DRV_PROBE_MAX
//  items, returns how many); reading them; their exits (true when pid was a
//  probe's, reaped here).
int64_t drv_probe_runs_tick(drv_engine_t *engine);
int drv_probe_runs_poll_items(drv_engine_t *engine, zmq_pollitem_t *items);
void drv_probe_runs_on_readable(drv_engine_t *engine, const zmq_pollitem_t *items, int count);
bool drv_probe_runs_on_exit(drv_engine_t *engine, pid_t pid, int status);
//  Kills every probe and tells each one's done that droverd stopped.
void drv_probe_runs_stop(drv_engine_t *engine);

#endif
