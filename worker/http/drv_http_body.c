/*  drv_http_body — see drv_http_body.h. */
#include "drv_http_body.h"
#include "drv_record.h"

#include "drover/drv_mpjson.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define JSON_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY)

static int s_pack_record(msgpack_packer *pk, const json_t *value, const char *what, size_t at, char *err,
                         size_t errlen)
{
    if (!json_is_object(value)) {
        snprintf(err, errlen, "%s %zu: a record must be a JSON object", what, at);
        return -1;
    }
    if (drv_mpjson_pack(pk, value) != 0) {
        snprintf(err, errlen, "%s %zu: out of memory", what, at);
        return -1;
    }
    return 0;
}

static int s_ndjson(const char *body, size_t size, msgpack_packer *pk, char *err, size_t errlen)
{
    size_t line = 0, count = 0;
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
            int rc = s_pack_record(pk, value, "line", line, err, errlen);
            json_decref(value);
            if (rc != 0) {
                return -1;
            }
            count++;
        }
        p = stop + 1;
    }
    return (int)count;
}

static int s_document(const char *body, size_t size, msgpack_packer *pk, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *doc = json_loadb(body, size, JSON_FLAGS, &jerr);
    if (!doc) {
        snprintf(err, errlen, "not JSON: %s at line %d column %d", jerr.text, jerr.line, jerr.column);
        return -1;
    }
    int count = 0;
    if (json_is_array(doc)) {
        size_t i;
        json_t *item;
        json_array_foreach(doc, i, item)
        {
            if (s_pack_record(pk, item, "item", i, err, errlen) != 0) {
                count = -1;
                break;
            }
            count++;
        }
    } else if (s_pack_record(pk, doc, "document", 0, err, errlen) == 0) {
        count = 1;
    } else {
        snprintf(err, errlen, "the body must be a JSON object or an array of objects");
        count = -1;
    }
    json_decref(doc);
    return count;
}

int drv_http_body_json(const char *body, size_t size, bool ndjson, msgpack_sbuffer *out, char *err, size_t errlen)
{
    drv_record_batch_begin(out);
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
    int count = ndjson ? s_ndjson(body, size, &pk, err, errlen) : s_document(body, size, &pk, err, errlen);
    if (count < 0) {
        msgpack_sbuffer_clear(out);
        return -1;
    }
    drv_record_batch_end(out, (uint32_t)count);
    return count;
}
