/*  drv_otlp_build — records back into an OTLP export request, the reverse of
    drv_otlp_records (docs/operations.md's mapping), for exporter:otlp. Records of
    one resource (attributes and schema URL) and scope are grouped back
    under one ResourceLogs/ResourceSpans and ScopeLogs/ScopeSpans, so a
    log → OTLP → log round trip gives the same records.

    A record's keys that the mapping does not name, or that hold a value of
    another type than it says (a trace_id that is not hex, say), become
    attributes of the LogRecord or Span (its own attributes win a clash).
    A record without `signal` becomes a LogRecord too: its `body` (or else
    its `message`) is the body, its other keys attributes.

    Everything the request points to lives in one zone, freed with it. */
#ifndef DRV_OTLP_BUILD_H
#define DRV_OTLP_BUILD_H

#include "drv_buf.h"
#include "drv_otlp.h"

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    drv_otlp_request_t request; // its message points into zone
    msgpack_zone zone;
} drv_otlp_built_t;

//  Builds the request of signal from count records (maps; they must outlive
//  the request: its strings may point into them). Returns 0, or -1 out of
//  memory or when one is not a map (nothing to free then).
int drv_otlp_build(drv_otlp_built_t *built, drv_otlp_signal_t signal, const msgpack_object *records, size_t count);
void drv_otlp_built_free(drv_otlp_built_t *built);
//  The request of signal from count records, appended to out as OTLP/JSON
//  (json) or protobuf: what exporter:otlp posts, exporter:kafka and
//  exporter:s3 write. 0, or -1 out of memory.
int drv_otlp_encode(drv_otlp_signal_t signal, bool json, const msgpack_object *records, size_t count, drv_buf_t *out);
//  True when a metric record's type is one OTLP has (gauge, sum, histogram,
//  exponential_histogram, summary): only those are built into metrics.
bool drv_otlp_metric_type_known(const msgpack_object *record);
//  The request a record goes into by its `signal`: span, metric of a known
//  type, log or none; -1 with why when it has no OTLP form here (another
//  signal, or a metric of no type OTLP has).
int drv_otlp_signal_of(const msgpack_object *record, char *why, size_t whylen);

#endif
