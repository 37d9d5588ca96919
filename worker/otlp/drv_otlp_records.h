/*  drv_otlp_records — OTLP requests as records, by docs/operations.md's mapping:
    one record per LogRecord or Span, carrying its resource and scope; and
    7.2's for metrics (drv_otlp_metrics.c): one record per data point. */
#ifndef DRV_OTLP_RECORDS_H
#define DRV_OTLP_RECORDS_H

#include "drv_otlp.h"

#include <msgpack.h>
#include <stdint.h>

//  Builds the request's records as msgpack objects in zone, never packed:
//  their strings and bytes point into the request, which must outlive them
//  (receiver:otlp frees it once the records are forwarded); each resource
//  and scope is built once and shared by its records. A LogRecord or Span
//  whose record would hold a duplicate key (in its attributes, its
//  resource's, its scope's or a kvlist) is left out: *rejected counts those
//  and why names the first. Returns how many records *records holds, -1
//  (why says so) when a value would nest deeper than DRV_MPCHECK_MAX_DEPTH
//  (records never do), or DRV_OTLP_NO_MEMORY when the zone could not grow.
int drv_otlp_to_objects(const drv_otlp_request_t *request, msgpack_zone *zone, msgpack_object **records,
                        int64_t *rejected, char *why, size_t whylen);
//  LogRecords, Spans or data points in the request.
size_t drv_otlp_count(const drv_otlp_request_t *request);

#endif
