/*  drv_otlp_records — OTLP requests as records, by contract 6.2's mapping:
    one record per LogRecord or Span, carrying its resource and scope. */
#ifndef DRV_OTLP_RECORDS_H
#define DRV_OTLP_RECORDS_H

#include "drv_otlp.h"

#include <msgpack.h>
#include <stdint.h>

//  Packs the request's records into out (cleared first) as one msgpack
//  array. A LogRecord or Span whose record would hold a duplicate key (in
//  its attributes, its resource's, its scope's or a kvlist) is left out:
//  *rejected counts those and why names the first. Returns the records packed.
int drv_otlp_to_records(const drv_otlp_request_t *request, msgpack_sbuffer *out, int64_t *rejected, char *why,
                        size_t whylen);

#endif
