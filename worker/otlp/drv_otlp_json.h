/*  drv_otlp_json — OTLP/JSON (the OTLP/HTTP JSON encoding) into the same
    protobuf-c structs protobuf bytes unpack into. As the specification
    says: field names in lowerCamelCase (the proto names are taken too),
    trace and span ids as hex, 64-bit integers as decimal strings or
    numbers, enums as integers (their names are taken too), bytes as
    base64; unknown fields are ignored. */
#ifndef DRV_OTLP_JSON_H
#define DRV_OTLP_JSON_H

#include "drv_buf.h"
#include "drv_otlp.h"

#include <stddef.h>

//  Builds out from JSON text. Returns 0, -1 with the path of the first bad
//  field and what is wrong in err, or DRV_OTLP_NO_MEMORY (out is then empty).
int drv_otlp_json_parse(drv_otlp_signal_t signal, const char *text, size_t size, drv_otlp_request_t *out, char *err,
                        size_t errlen);

//  Appends the request as OTLP/JSON text (drv_otlp_json_write.c: the same
//  rules, written the way the specification's examples are). Returns 0 or
//  -1 out of memory.
int drv_otlp_json_write(const drv_otlp_request_t *request, drv_buf_t *out);

#endif
