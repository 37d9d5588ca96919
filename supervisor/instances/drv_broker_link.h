/*  drv_broker_link — droverd's side of the broker: starting and restarting
    it, and telling it which front doors and instances each pipeline has. */
#ifndef DRV_BROKER_LINK_H
#define DRV_BROKER_LINK_H

#include "drv_engine.h"

void drv_broker_start(drv_engine_t *engine);
void drv_broker_on_exit(drv_engine_t *engine, int status);
void drv_broker_on_message(drv_engine_t *engine, void *msg);
void drv_broker_pipeline_set(drv_engine_t *engine, drv_pipeline_t *pipeline);
void drv_broker_pipeline_del(drv_engine_t *engine, drv_pipeline_t *pipeline);
void drv_broker_instance(drv_engine_t *engine, drv_instance_t *inst, int msg_type);
int64_t drv_broker_tick(drv_engine_t *engine);

#endif
