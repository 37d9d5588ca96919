/*  drv_prom — metric records as Prometheus remote write 1.0
    (docs/operations.md, "Prometheus remote write"): names and labels as
    OpenTelemetry's Prometheus compatibility specification translates them
    (drv_prom_names.c), a batch of records as one snappy-compressed
    WriteRequest (drv_prom_write.c), and a WriteRequest as records
    (drv_prom_read.c). */
#ifndef DRV_PROM_H
#define DRV_PROM_H

#include "drv_buf.h"

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>

#define DRV_PROM_NAME_MAX 512
#define DRV_PROM_LABELS_MAX 128              // a series' labels at most, read or written
#define DRV_PROM_LABEL_BYTES_MAX (64 * 1024) // a label's name or value at most, read (a scraped line's bound too)

//  Why a record cannot go as remote write, or NULL when it can: a metric
//  record (signal metric) that is a gauge, a cumulative sum, a cumulative
//  histogram or a summary.
const char *drv_prom_refusal(const msgpack_object *record);
//  Which of shards lanes the record goes in, so that a series' samples are
//  always in one (posted in order) and a resource's target_info with all
//  the series it describes: a resource with attributes past service.*
//  (it makes a target_info) by the resource, else by the metric's name and
//  attributes; a map's order does not matter. -1 with *why (as
//  drv_prom_refusal says it) when it cannot go as remote write.
int drv_prom_shard(const msgpack_object *record, int shards, const char **why);
//  The WriteRequest of count such records, snappy-compressed, appended to
//  body: 0, or -1 with the reason in err.
int drv_prom_encode(const msgpack_object *records, size_t count, drv_buf_t *body, char *err, size_t errlen);

#define DRV_PROM_TOO_MANY -2 // drv_prom_decode: over max_samples
//  A WriteRequest's samples (protobuf, decompressed), each as a metric
//  record in zone (drv_prom_read.c): their count, -1 with err when it is
//  not a WriteRequest (or memory ran out), DRV_PROM_TOO_MANY past
//  max_samples.
int drv_prom_decode(const void *data, size_t size, msgpack_zone *zone, size_t max_samples, msgpack_object **records,
                    char *err, size_t errlen);

//  The Prometheus name of an OpenTelemetry metric (drv_prom_names.c): the
//  name with invalid characters made _, the unit's suffix (seconds, bytes,
//  X_per_Y; ratio for a gauge of unit 1) and, for a counter, _total.
void drv_prom_metric_name(const char *name, size_t len, const char *unit, size_t ulen, bool counter, bool gauge,
                          char *out, size_t size);
//  A label name for an attribute key: invalid characters made _, a leading
//  digit prefixed with key_.
void drv_prom_label_name(const char *key, size_t len, char *out, size_t size);
//  A float as Prometheus writes a label value (le, quantile): the shortest
//  text that reads back as the same double, +Inf, -Inf, NaN.
void drv_prom_float_text(double value, char *out, size_t size);

#endif
