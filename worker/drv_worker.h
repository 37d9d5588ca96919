/*  drv_worker — one pipeline instance: fetch the spec from droverd, build the
    DAG, say READY, then move batches, heartbeat, and drain on request. */
#ifndef DRV_WORKER_H
#define DRV_WORKER_H

#include "drover/drv_msg.h"

#include <stdint.h>

//  Exit codes of drover-worker.
#define DRV_WORKER_EXIT_OK 0                             // drained, or stopped on SIGTERM
#define DRV_WORKER_EXIT_USAGE 100                        // bad arguments
#define DRV_WORKER_EXIT_INIT_FAILED DRV_EXIT_INIT_FAILED // a node could not start (drv_msg.h)
#define DRV_WORKER_EXIT_SYSTEM 111                       // lost droverd, or a socket failed

//  Runs the instance until it drains or is told to stop; returns an exit code.
//  main_us: monotonic µs when main() began, for the startup timings logged
//  at debug level.
int drv_worker_run(const char *control_endpoint, const char *instance, int64_t main_us);

#endif
