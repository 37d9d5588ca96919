/*  drv_kafka_body — see drv_kafka_body.h. */
#include "drv_kafka_body.h"
#include "drv_ndjson.h"
#include "drv_otlp_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_KEY 0xffffffffu

drv_kafka_format_t drv_kafka_format(const char *name)
{
    return !strcmp(name, "otlp_json") ? DRV_KAFKA_OTLP_JSON
           : !strcmp(name, "ndjson")  ? DRV_KAFKA_NDJSON
           : !strcmp(name, "msgpack") ? DRV_KAFKA_MSGPACK
                                      : DRV_KAFKA_OTLP_PROTO;
}

static int s_put_u32(drv_buf_t *body, uint32_t value)
{
    return drv_buf_append(body, &value, sizeof value);
}

//  The key of a record as text: a string as it is, a number in decimal
//  (into number); anything else (or nothing there) is no key (NULL).
static const char *s_key_text(const drv_record_path_t *key, const msgpack_object *record, char number[32], size_t *len)
{
    const msgpack_object *value = key ? drv_record_path_get(record, key) : NULL;
    *len = 0;
    if (value && (value->type == MSGPACK_OBJECT_STR || value->type == MSGPACK_OBJECT_BIN)) {
        *len = value->via.str.size;
        return value->via.str.ptr;
    }
    if (value && value->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        *len = (size_t)snprintf(number, 32, "%llu", (unsigned long long)value->via.u64);
        return number;
    }
    if (value && value->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *len = (size_t)snprintf(number, 32, "%lld", (long long)value->via.i64);
        return number;
    }
    return NULL;
}

static int s_put_key(const drv_record_path_t *key, drv_buf_t *body, const msgpack_object *record)
{
    char number[32];
    size_t len;
    const char *text = s_key_text(key, record, number, &len);
    if (!text) {
        return s_put_u32(body, NO_KEY);
    }
    return s_put_u32(body, (uint32_t)len) || drv_buf_append(body, text, len);
}

static bool s_same_key(const drv_record_path_t *key, const msgpack_object *a, const msgpack_object *b)
{
    char number_a[32], number_b[32];
    size_t len_a, len_b;
    const char *text_a = s_key_text(key, a, number_a, &len_a), *text_b = s_key_text(key, b, number_b, &len_b);
    return (!text_a && !text_b) || (text_a && text_b && len_a == len_b && !memcmp(text_a, text_b, len_a));
}

//  One OTLP request of count records as a message's value.
static int s_put_value(drv_kafka_format_t format, int lane, const msgpack_object *records, size_t count,
                       drv_buf_t *body)
{
    size_t at = body->len;
    int rc = s_put_u32(body, 0);
    rc = rc ? rc : drv_otlp_encode((drv_otlp_signal_t)lane, format == DRV_KAFKA_OTLP_JSON, records, count, body);
    if (rc == 0) {
        uint32_t size = (uint32_t)(body->len - at - sizeof(uint32_t));
        memcpy(body->data + at, &size, sizeof size);
    }
    return rc;
}

//  One message of an OTLP request of count records (with their key),
//  split in two while it weighs more than max_bytes and holds more than one.
static int s_put_otlp(drv_kafka_format_t format, const drv_record_path_t *key, int lane, const msgpack_object *records,
                      size_t count, size_t max_bytes, drv_buf_t *body)
{
    size_t at = body->len;
    if (s_put_u32(body, (uint32_t)count) || s_put_key(key, body, &records[0]) ||
        s_put_value(format, lane, records, count, body)) {
        return -1;
    }
    if (count < 2 || body->len - at + DRV_KAFKA_MESSAGE_FRAMING <= max_bytes) {
        return 0;
    }
    body->len = at;
    size_t half = count / 2;
    return s_put_otlp(format, key, lane, records, half, max_bytes, body) ||
           s_put_otlp(format, key, lane, records + half, count - half, max_bytes, body);
}

//  One record as a message's value: a JSON object, or a msgpack map.
static int s_put_record(drv_kafka_format_t format, const msgpack_object *record, drv_buf_t *body)
{
    size_t at = body->len;
    int rc = s_put_u32(body, 0);
    if (rc == 0 && format == DRV_KAFKA_NDJSON) {
        rc = drv_ndjson_append(body, record);
        body->len -= rc == 0; // the line's newline is not the record's
    } else if (rc == 0) {
        msgpack_packer packer;
        msgpack_packer_init(&packer, body, drv_buf_msgpack_write);
        rc = msgpack_pack_object(&packer, *record);
    }
    if (rc == 0) {
        uint32_t size = (uint32_t)(body->len - at - sizeof(uint32_t));
        memcpy(body->data + at, &size, sizeof size);
    }
    return rc;
}

//  The OTLP formats with a key: one request per key, its records in the
//  order they came, the keys in the order each first came.
static int s_put_otlp_keyed(drv_kafka_format_t format, const drv_record_path_t *key, int lane,
                            const msgpack_object *records, size_t count, size_t max_bytes, drv_buf_t *body)
{
    msgpack_object *group = malloc((count ? count : 1) * sizeof *group);
    bool *taken = calloc(count ? count : 1, sizeof *taken);
    int rc = group && taken ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < count; i++) {
        if (taken[i]) {
            continue;
        }
        size_t n = 0;
        for (size_t k = i; k < count; k++) {
            if (!taken[k] && s_same_key(key, &records[i], &records[k])) {
                group[n++] = records[k];
                taken[k] = true;
            }
        }
        rc = s_put_otlp(format, key, lane, group, n, max_bytes, body);
    }
    free(group);
    free(taken);
    return rc;
}

int drv_kafka_body_write(drv_kafka_format_t format, const drv_record_path_t *key, int lane,
                         const msgpack_object *records, size_t count, size_t max_bytes, drv_buf_t *body)
{
    bool otlp = format == DRV_KAFKA_OTLP_PROTO || format == DRV_KAFKA_OTLP_JSON;
    if (otlp && count > 0) {
        return key ? s_put_otlp_keyed(format, key, lane, records, count, max_bytes, body)
                   : s_put_otlp(format, NULL, lane, records, count, max_bytes, body);
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < count; i++) {
        rc = s_put_u32(body, 1) || s_put_key(key, body, &records[i]) || s_put_record(format, &records[i], body);
    }
    return rc;
}

bool drv_kafka_body_next(drv_kafka_reading_t *r, drv_kafka_message_t *message)
{
    uint32_t len;
    if (r->end - r->at < (ptrdiff_t)(2 * sizeof len)) {
        return false;
    }
    memcpy(&len, r->at, sizeof len);
    r->at += sizeof len;
    message->records = len;
    memcpy(&len, r->at, sizeof len);
    r->at += sizeof len;
    message->key = len == NO_KEY ? NULL : r->at;
    message->key_len = len == NO_KEY ? 0 : len;
    r->at += message->key_len;
    memcpy(&len, r->at, sizeof len);
    r->at += sizeof len;
    message->value = r->at;
    message->value_len = len;
    r->at += len;
    return true;
}
