/*  drv_ndjson — one msgpack record as one line of JSON (schemas/pipeline_spec.md:
    binary values, and strings that are not UTF-8, become base64 strings). */
#ifndef DRV_NDJSON_H
#define DRV_NDJSON_H

#include "drv_buf.h"

#include <msgpack.h>

//  Appends the record as JSON followed by a newline. Returns 0 or -1.
int drv_ndjson_append(drv_buf_t *out, const msgpack_object *record);

#endif
