/*  drv_http_body — the JSON bodies receiver:http takes, as records: NDJSON
    (one object per line) or one JSON document (an object, or an array of
    objects), built as msgpack objects straight in the batch zone (nothing
    packed to be unpacked again). A body is taken whole or not at all: the
    first bad line or item is named and nothing is taken. */
#ifndef DRV_HTTP_BODY_H
#define DRV_HTTP_BODY_H

#include <jansson.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>

//  The records of body as objects in zone, in *records. Their strings point
//  into the parsed JSON, which *keep holds: json_decref it once the records
//  are used. ndjson: one object per line (blank lines skipped); else one
//  document. Returns the records, or -1 with what is wrong in err ("line 3:
//  ...", "item 2: ...", out of memory, nested deeper than records may).
int drv_http_body_records(const char *body, size_t size, bool ndjson, msgpack_zone *zone, json_t **keep,
                          msgpack_object **records, char *err, size_t errlen);

#endif
