/*  drv_prom_points — the samples of one scrape (drv_prom_text.h) gathered
    into OpenTelemetry data points and made metric records, as receiver:otlp
    makes them (drv_prom_points.c says how each type maps). */
#ifndef DRV_PROM_POINTS_H
#define DRV_PROM_POINTS_H

#include "drv_prom_text.h"

#include <msgpack.h>

typedef struct drv_prom_points_t drv_prom_points_t;

//  Points of one scrape, built in zone: every record has resource and
//  scope, and target (a map: the target's labels) among its attributes;
//  a sample without a timestamp is at now_ms.
drv_prom_points_t *drv_prom_points_new(msgpack_zone *zone, const msgpack_object *resource, const msgpack_object *scope,
                                       const msgpack_object *target, int64_t now_ms);
void drv_prom_points_destroy(drv_prom_points_t **self_p);
//  drv_prom_text_parse's callback: arg is the drv_prom_points_t.
void drv_prom_points_add(void *arg, const drv_prom_sample_t *sample);
//  The records, one per point, in zone: their count, or -1 out of memory.
int drv_prom_points_records(drv_prom_points_t *self, msgpack_object **records);

#endif
