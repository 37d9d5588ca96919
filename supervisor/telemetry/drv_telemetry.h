/*  drv_telemetry — droverd's own metrics and log lines pushed as OTLP
    (engine.telemetry.otlp; docs/operations.md, "Its own telemetry"), over
    HTTP or gRPC, from droverd's loop without blocking it: libcurl's multi
    interface (drv_curl_loop), one request of each signal at a time. The
    metrics are the series of /metrics every interval_secs; log lines are
    queued as droverd writes them (at most max_queued_logs: past it the
    oldest go, counted) and sent every second. Nothing goes through a
    pipeline: a pipeline it watches never carries its own telemetry. */
#ifndef DRV_TELEMETRY_H
#define DRV_TELEMETRY_H

#include "drv_engine.h"

#include <stdint.h>

typedef struct drv_telemetry_t drv_telemetry_t;

//  The agent of engine->config's engine.telemetry: NULL with err empty
//  when there is none, NULL with err when it cannot start.
drv_telemetry_t *drv_telemetry_new(drv_engine_t *engine, char *err, size_t errlen);
void drv_telemetry_destroy(drv_telemetry_t **self_p);
//  The descriptor droverd polls (-1: none).
int drv_telemetry_fd(const drv_telemetry_t *self);
//  Reads what came back, sends what is due; ms until it is due again (-1: never).
int64_t drv_telemetry_tick(drv_telemetry_t *self);

#endif
