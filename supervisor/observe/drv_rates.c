/*  drv_rates — see the header. */
#include "drv_rates.h"
#include "drv_registry.h"
#include "drv_status.h"

#include "drover/drv_time.h"

#include <stdlib.h>

typedef struct {
    float in, out, errors; // a second, over the interval
} sample_t;

struct drv_rates_t {
    sample_t samples[DRV_RATES_KEPT];
    size_t count, next; // a ring
    int64_t last_in, last_out, last_errors, last_ms;
};

static void s_sample(drv_engine_t *engine, drv_pipeline_t *p, void *arg)
{
    (void)engine;
    int64_t now = *(const int64_t *)arg;
    if (!p->rates && !(p->rates = calloc(1, sizeof *p->rates))) {
        return;
    }
    struct drv_rates_t *r = p->rates;
    drv_totals_t t = drv_status_totals(p);
    if (r->last_ms > 0 && now > r->last_ms) {
        float secs = (float)(now - r->last_ms) / 1000.0f;
        //  Totals never go back, but a deleted and recreated pipeline starts again: no negative
        //  rate.
        r->samples[r->next] =
            (sample_t){.in = t.records_in > r->last_in ? (float)(t.records_in - r->last_in) / secs : 0,
                       .out = t.records_out > r->last_out ? (float)(t.records_out - r->last_out) / secs : 0,
                       .errors = t.errors > r->last_errors ? (float)(t.errors - r->last_errors) / secs : 0};
        r->next = (r->next + 1) % DRV_RATES_KEPT;
        r->count += r->count < DRV_RATES_KEPT;
    }
    r->last_in = t.records_in;
    r->last_out = t.records_out;
    r->last_errors = t.errors;
    r->last_ms = now;
}

int64_t drv_rates_tick(drv_engine_t *engine)
{
    int64_t now = drv_time_mono_ms();
    if (now < engine->rates_due_ms) {
        return engine->rates_due_ms - now;
    }
    engine->rates_due_ms = now + DRV_RATES_EVERY_MS;
    drv_registry_each_pipeline(engine, s_sample, &now);
    return DRV_RATES_EVERY_MS;
}

json_t *drv_rates_json(const drv_pipeline_t *p)
{
    json_t *samples = json_array();
    const struct drv_rates_t *r = p->rates;
    for (size_t i = 0; r && i < r->count; i++) {
        const sample_t *s = &r->samples[(r->next + DRV_RATES_KEPT - r->count + i) % DRV_RATES_KEPT];
        json_array_append_new(samples, json_pack("{s:f, s:f, s:f}", "in", (double)s->in, "out", (double)s->out,
                                                 "errors", (double)s->errors));
    }
    return json_pack("{s:i, s:o}", "interval_secs", DRV_RATES_EVERY_MS / 1000, "samples", samples);
}
