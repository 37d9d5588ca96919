/*  drv_metrics — the Prometheus text of GET /metrics. */
#ifndef DRV_METRICS_H
#define DRV_METRICS_H

#include "drv_engine.h"

char *drv_metrics_render(drv_engine_t *engine);

#endif
