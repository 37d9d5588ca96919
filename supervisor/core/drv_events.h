/*  drv_events — the event stream (PUB): every layer tells operators what
    happened through it, so it sits in core. */
#ifndef DRV_EVENTS_H
#define DRV_EVENTS_H

#include "drv_engine.h"

//  Publishes topic with {time, group, pipeline, ...fields}; fields is stolen.
void drv_events_publish(drv_engine_t *engine, const char *topic, const char *group, const char *pipeline,
                        json_t *fields);

#endif
