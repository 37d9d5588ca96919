/*  drv_rates — each pipeline's rates over the last 5 minutes, kept by
    droverd so that whoever looks (the console's sparklines) sees them at
    once: every DRV_RATES_EVERY_MS, the difference of each pipeline's totals
    (records in, out, errors; never reset by a replace) since the last
    sample, as rates a second, in a ring of DRV_RATES_KEPT samples.
    720 bytes a pipeline once it has run for 5 minutes. */
#ifndef DRV_RATES_H
#define DRV_RATES_H

#include "drv_engine.h"

#define DRV_RATES_EVERY_MS 5000
#define DRV_RATES_KEPT 60

//  Takes the samples that are due; returns ms until the next.
int64_t drv_rates_tick(drv_engine_t *engine);
//  {interval_secs, samples: [{in, out, errors}, ...]} oldest first (new reference).
json_t *drv_rates_json(const drv_pipeline_t *pipeline);

#endif
