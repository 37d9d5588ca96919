/*  drv_prom_series — the series of one remote-write request as it is built
    (drv_prom_write.c fills it): samples gathered by their labels into
    TimeSeries, each series' samples put in time order, the whole packed
    and snappy-compressed. Everything lives in one msgpack zone, given back
    at the end: no allocation of its own per sample, label or series. */
#ifndef DRV_PROM_SERIES_H
#define DRV_PROM_SERIES_H

#include "drv_buf.h"

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

//  A label's name and value, as long as they say (not NUL-terminated: they
//  may point into a record); a value NULL or empty is no label.
typedef struct {
    const char *name, *value;
    size_t nlen, vlen;
} drv_prom_label_t;

static inline drv_prom_label_t drv_prom_label(const char *name, const char *value)
{
    return (drv_prom_label_t){name, value, strlen(name), value ? strlen(value) : 0};
}

typedef struct series_t series_t;

typedef struct {
    msgpack_zone *zone;
    series_t **table; // open addressing on the key's hash, a power of two long
    size_t table_size;
    series_t **series; // in the order first seen
    size_t series_count, series_cap;
    drv_buf_t key; // the key of the sample at hand
    bool failed;   // memory ran out: the request cannot be made
} drv_prom_series_t;

//  0, or -1 when memory runs out.
int drv_prom_series_init(drv_prom_series_t *self);
void drv_prom_series_free(drv_prom_series_t *self);
//  size bytes that live as long as self (not cleared); NULL when memory ran out.
void *drv_prom_series_alloc(drv_prom_series_t *self, size_t size);
//  A copy of text (len bytes, NUL-terminated) that lives as long as self; NULL when memory ran out.
char *drv_prom_series_text(drv_prom_series_t *self, const char *text, size_t len);
//  The labels sorted by name, those without a name or a value left out, of
//  a name twice one: how many stand.
size_t drv_prom_labels_normalize(drv_prom_label_t *labels, size_t n);
//  Whether a series of these labels (normalized) holds a sample already.
bool drv_prom_series_holds(drv_prom_series_t *self, const drv_prom_label_t *labels, size_t n);
//  The sample value at ms with labels (n of them; sorted and copied as the
//  series needs): into its series.
void drv_prom_series_add(drv_prom_series_t *self, drv_prom_label_t *labels, size_t n, double value, int64_t ms);
//  The WriteRequest of every series, snappy-compressed, appended to body: 0, or -1 when memory ran out.
int drv_prom_series_pack(drv_prom_series_t *self, drv_buf_t *body);
//  The hash the series table uses (eight bytes a step).
uint64_t drv_prom_hash(const char *key, size_t len);

#endif
