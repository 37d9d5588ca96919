/*  drv_histo — a latency histogram with fixed buckets, as Prometheus
    renders it: a process observes durations (a worker: each HTTP or gRPC
    request a receiver answered, each batch an exporter posted; droverd:
    each rollout), ships the counts as JSON (the heartbeat), and droverd
    sums them over instances and renders _bucket, _sum and _count lines. */
#ifndef DRV_HISTO_H
#define DRV_HISTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

//  Upper bounds, in seconds, then +Inf. Requests: 0.5 ms to 10 s;
//  operations (a rollout, with its canary's hold): 0.1 s to 2 h.
#define DRV_HISTO_BOUNDS                                                                                               \
    {                                                                                                                  \
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10                                 \
    }
#define DRV_HISTO_LONG_BOUNDS                                                                                          \
    {                                                                                                                  \
        0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200                                               \
    }
#define DRV_HISTO_BUCKETS 15 // the bounds and +Inf

typedef struct {
    bool long_bounds;                  // DRV_HISTO_LONG_BOUNDS (set before the first observation)
    int64_t counts[DRV_HISTO_BUCKETS]; // per bucket, not cumulative
    int64_t count;
    double sum_secs;
} drv_histo_t;

void drv_histo_observe(drv_histo_t *self, double secs);
//  [sum_secs, count, counts...] (new reference).
json_t *drv_histo_json(const drv_histo_t *self);
//  Adds what drv_histo_json made into self; false when it is not that.
bool drv_histo_add_json(drv_histo_t *self, const json_t *json);
//  The lines of one series: name_bucket{labels,le="..."} (cumulative),
//  name_sum{labels} and name_count{labels}; labels without braces, may be "".
//  Written with print (an snprintf-like appender and its argument).
typedef void(drv_histo_print_fn)(void *arg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void drv_histo_render(const drv_histo_t *self, const char *name, const char *labels, drv_histo_print_fn *print,
                      void *arg);

#endif
