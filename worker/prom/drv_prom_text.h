/*  drv_prom_text — the Prometheus text exposition format 0.0.4 and
    OpenMetrics 1.0 text, parsed in place (receiver:prometheus;
    docs/operations.md, "Scraping Prometheus targets"): each sample said to
    a callback with its family's type, help and unit. No maintained C
    library parses them, so this one is written to be bounded: a line, a
    label's name and value, a sample's labels and the samples of a scrape
    all have limits, and anything else is refused with the line it is on.
    Fuzzed as prom_text. */
#ifndef DRV_PROM_TEXT_H
#define DRV_PROM_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DRV_PROM_TEXT_LABELS_MAX 128
#define DRV_PROM_TEXT_LINE_MAX (64 * 1024)

typedef enum {
    DRV_PROM_UNTYPED,
    DRV_PROM_COUNTER,
    DRV_PROM_GAUGE,
    DRV_PROM_HISTOGRAM,
    DRV_PROM_SUMMARY,
    DRV_PROM_INFO,
    DRV_PROM_STATESET,
    DRV_PROM_GAUGEHISTOGRAM,
} drv_prom_type_t;

typedef struct {
    const char *name, *value; // NUL-ended, in the parsed text
} drv_prom_label_t;

typedef struct {
    const char *family; // the family the sample belongs to (its TYPE line's name), or its own name
    const char *name;   // the sample's name: family, or family with _bucket, _sum, _count, _total, _created...
    drv_prom_type_t type;
    const char *help, *unit; // "" when not said
    const drv_prom_label_t *labels;
    size_t label_count;
    double value;
    int64_t timestamp_ms; // -1: none given
} drv_prom_sample_t;

typedef void(drv_prom_sample_fn)(void *arg, const drv_prom_sample_t *sample);

//  Parses text (len bytes, NUL-ended, changed in place) as OpenMetrics when
//  openmetrics, else as the text format 0.0.4: each sample to fn. Returns
//  the samples, or -1 with the reason in err ("line N: ...") — over
//  max_samples too; fn has been called for the samples before it.
int drv_prom_text_parse(char *text, size_t len, bool openmetrics, size_t max_samples, drv_prom_sample_fn *fn, void *arg,
                        char *err, size_t errlen);

#endif
