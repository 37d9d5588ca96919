/*  drv_broker_link — droverd's side of the broker: starting and restarting
    it, and telling it which front doors and instances each pipeline has. */
#ifndef DRV_BROKER_LINK_H
#define DRV_BROKER_LINK_H

#include "drv_engine.h"

//  The broker as droverd sees it; written only here, read by status and metrics.
typedef struct drv_broker_link_t {
    pid_t pid;             // 0 while not running
    bool connected;        // it said HELLO: messages to it are sent
    bool stopping;         // droverd's shutdown asked it to stop
    bool renewing;         // an upgrade stopped it: started again at once, from the new binary
    int64_t restart_at_ms; // mono: when to start it again (0: not scheduled)
    int64_t backoff_ms;
    int restarts;            // restarts after it exited
    int64_t started_mono_ms; // when the current one was spawned
    int64_t forwarded;       // batches it forwarded (its heartbeat)
    int64_t refused;         // producer messages it refused as too large (its heartbeat)
} drv_broker_link_t;

drv_broker_link_t *drv_broker_link_new(void);
void drv_broker_link_destroy(drv_broker_link_t **self_p);
void drv_broker_start(drv_engine_t *engine);
//  After an upgrade: the broker the droverd before started (pid; 0: none)
//  is stopped and started again from the new binary.
void drv_broker_adopt(drv_engine_t *engine, pid_t pid);
//  SIGTERM, last in droverd's shutdown; drv_broker_stopped says when it is gone.
void drv_broker_stop(drv_engine_t *engine);
bool drv_broker_stopped(drv_engine_t *engine);
//  Whether pid is the broker's (for the reaper); SIGKILL it.
bool drv_broker_is(drv_engine_t *engine, pid_t pid);
void drv_broker_kill(drv_engine_t *engine);
void drv_broker_on_exit(drv_engine_t *engine, int status);
void drv_broker_on_message(drv_engine_t *engine, void *msg);
void drv_broker_pipeline_set(drv_engine_t *engine, drv_pipeline_t *pipeline);
void drv_broker_pipeline_del(drv_engine_t *engine, drv_pipeline_t *pipeline);
void drv_broker_instance(drv_engine_t *engine, drv_instance_t *inst, int msg_type);
int64_t drv_broker_tick(drv_engine_t *engine);

#endif
