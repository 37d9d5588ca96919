/*  drv_http_body — see drv_http_body.h. */
#include "drv_http_body.h"

#include "drover/drv_mpcheck.h"
#include "drover/drv_mpjson.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define JSON_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY)

//  value as record at of records; -1 with err (what at names it).
static int s_record(const json_t *value, msgpack_zone *zone, msgpack_object *record, const char *what, size_t at,
                    char *err, size_t errlen)
{
    if (!json_is_object(value)) {
        snprintf(err, errlen, "%s %zu: a record must be a JSON object", what, at);
        return -1;
    }
    int rc = drv_mpjson_object(value, zone, DRV_RECORD_MAX_DEPTH, record);
    if (rc == -2) {
        snprintf(err, errlen, "%s %zu: nested deeper than %d levels", what, at, DRV_RECORD_MAX_DEPTH);
    } else if (rc != 0) {
        snprintf(err, errlen, "%s %zu: out of memory", what, at);
    }
    return rc ? -1 : 0;
}

static size_t s_lines(const char *body, size_t size)
{
    size_t lines = 1;
    for (const char *p = body; (p = memchr(p, '\n', (size_t)(body + size - p))); p++) {
        lines++;
    }
    return lines;
}

static int s_ndjson(const char *body, size_t size, msgpack_zone *zone, json_t *keep, msgpack_object **records,
                    char *err, size_t errlen)
{
    size_t line = 0, count = 0, most = s_lines(body, size);
    *records = msgpack_zone_malloc(zone, most * sizeof **records);
    if (!*records) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const char *p = body, *end = body + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        line++;
        size_t len = (size_t)(stop - p);
        size_t blank = strspn(p, " \t\r");
        if (blank < len) {
            json_error_t jerr;
            json_t *value = json_loadb(p, len, JSON_FLAGS, &jerr);
            if (!value) {
                snprintf(err, errlen, "line %zu: not JSON: %s at column %d", line, jerr.text, jerr.column);
                return -1;
            }
            if (json_array_append_new(keep, value) != 0 ||
                s_record(value, zone, &(*records)[count], "line", line, err, errlen) != 0) {
                return -1;
            }
            count++;
        }
        p = stop + 1;
    }
    return (int)count;
}

static int s_document(const char *body, size_t size, msgpack_zone *zone, json_t *keep, msgpack_object **records,
                      char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *doc = json_loadb(body, size, JSON_FLAGS, &jerr);
    if (!doc) {
        snprintf(err, errlen, "not JSON: %s at line %d column %d", jerr.text, jerr.line, jerr.column);
        return -1;
    }
    if (json_array_append_new(keep, doc) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (!json_is_array(doc) && !json_is_object(doc)) {
        snprintf(err, errlen, "the body must be a JSON object or an array of objects");
        return -1;
    }
    size_t n = json_is_array(doc) ? json_array_size(doc) : 1;
    *records = msgpack_zone_malloc(zone, (n ? n : 1) * sizeof **records);
    if (!*records) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (json_is_object(doc)) {
        return s_record(doc, zone, *records, "document", 0, err, errlen) == 0 ? 1 : -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (s_record(json_array_get(doc, i), zone, &(*records)[i], "item", i, err, errlen) != 0) {
            return -1;
        }
    }
    return (int)n;
}

int drv_http_body_records(const char *body, size_t size, bool ndjson, msgpack_zone *zone, json_t **keep,
                          msgpack_object **records, char *err, size_t errlen)
{
    *records = NULL;
    *keep = json_array();
    if (!*keep) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int count = ndjson ? s_ndjson(body, size, zone, *keep, records, err, errlen)
                       : s_document(body, size, zone, *keep, records, err, errlen);
    if (count < 0 || count > INT32_MAX) {
        json_decref(*keep);
        *keep = NULL;
        *records = NULL;
        return -1;
    }
    return count;
}
