/*  drv_http_body — the JSON bodies receiver:http takes, as records: NDJSON
    (one object per line) or one JSON document (an object, or an array of
    objects), packed as one msgpack array of maps. A body is taken whole or
    not at all: the first bad line or item is named and nothing is packed. */
#ifndef DRV_HTTP_BODY_H
#define DRV_HTTP_BODY_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>

//  Packs the records of body into out (cleared first). ndjson: one object
//  per line (blank lines skipped); else one document. Returns the records,
//  or -1 with what is wrong in err ("line 3: ...", "item 2: ...").
int drv_http_body_json(const char *body, size_t size, bool ndjson, msgpack_sbuffer *out, char *err, size_t errlen);

#endif
