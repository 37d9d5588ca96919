/*  drv_lifecycle — one instance from spawn to exit: HELLO, READY,
    heartbeats, restarts with backoff, drain, SIGTERM, SIGKILL. What happens
    is decided by its state table (drv_inst_table.h); this applies it. */
#ifndef DRV_LIFECYCLE_H
#define DRV_LIFECYCLE_H

#include "drv_engine.h"

void drv_lifecycle_start(drv_engine_t *engine, drv_instance_t *inst);
//  An instance the droverd before an upgrade started, ready and running as
//  pid: its heartbeats are awaited as if it had just sent one.
void drv_lifecycle_adopt(drv_engine_t *engine, drv_instance_t *inst, pid_t pid, int64_t started_at);
void drv_lifecycle_on_message(drv_engine_t *engine, drv_instance_t *inst, void *msg);
//  Tells a running instance which nodes its pipeline's taps sample
//  (pipeline->tap_nodes; none: stop). Instances are also told when they
//  become ready. Returns whether it could be sent: false while the
//  instance's control connection is not there (an upgrade asks so).
bool drv_lifecycle_tell_taps(drv_engine_t *engine, drv_instance_t *inst);
void drv_lifecycle_on_exit(drv_engine_t *engine, drv_instance_t *inst, int status);
//  Drain, then SIGTERM at the drain deadline, then SIGKILL.
void drv_lifecycle_retire(drv_engine_t *engine, drv_instance_t *inst, int64_t drain_timeout_ms);
void drv_lifecycle_kill(drv_engine_t *engine, drv_instance_t *inst);
//  Restarts, heartbeat checks, deadlines. Returns ms until the next is due (-1 none).
int64_t drv_lifecycle_tick(drv_engine_t *engine);

#endif
