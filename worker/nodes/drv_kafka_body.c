/*  drv_kafka_body — see drv_kafka_body.h. */
#include "drv_kafka_body.h"
#include "drv_ndjson.h"
#include "drv_otlp_build.h"
#include "drv_otlp_json.h"

#include <stdio.h>
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

//  The key of a record as text: a string as it is, a number in decimal;
//  anything else (or nothing there) is no key.
static int s_put_key(const drv_record_path_t *key, drv_buf_t *body, const msgpack_object *record)
{
    const msgpack_object *value = key ? drv_record_path_get(record, key) : NULL;
    char number[32];
    const char *text = NULL;
    size_t len = 0;
    if (value && (value->type == MSGPACK_OBJECT_STR || value->type == MSGPACK_OBJECT_BIN)) {
        text = value->via.str.ptr;
        len = value->via.str.size;
    } else if (value && value->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        len = (size_t)snprintf(number, sizeof number, "%llu", (unsigned long long)value->via.u64);
        text = number;
    } else if (value && value->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        len = (size_t)snprintf(number, sizeof number, "%lld", (long long)value->via.i64);
        text = number;
    }
    if (!text) {
        return s_put_u32(body, NO_KEY);
    }
    return s_put_u32(body, (uint32_t)len) || drv_buf_append(body, text, len);
}

//  One OTLP request of count records as a message's value.
static int s_put_otlp(drv_kafka_format_t format, int lane, const msgpack_object *records, size_t count, drv_buf_t *body)
{
    drv_otlp_built_t built;
    if (drv_otlp_build(&built, (drv_otlp_signal_t)lane, records, count) != 0) {
        return -1;
    }
    size_t at = body->len;
    int rc = s_put_u32(body, 0);
    if (rc == 0 && format == DRV_KAFKA_OTLP_JSON) {
        rc = drv_otlp_json_write(&built.request, body);
    } else if (rc == 0) {
        size_t packed = protobuf_c_message_get_packed_size(built.request.message);
        rc = drv_buf_reserve(body, packed);
        if (rc == 0) {
            body->len += protobuf_c_message_pack(built.request.message, (uint8_t *)body->data + body->len);
        }
    }
    drv_otlp_built_free(&built);
    if (rc == 0) {
        uint32_t size = (uint32_t)(body->len - at - sizeof(uint32_t));
        memcpy(body->data + at, &size, sizeof size);
    }
    return rc;
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

int drv_kafka_body_write(drv_kafka_format_t format, const drv_record_path_t *key, int lane,
                         const msgpack_object *records, size_t count, drv_buf_t *body)
{
    int rc = 0;
    bool otlp = format == DRV_KAFKA_OTLP_PROTO || format == DRV_KAFKA_OTLP_JSON;
    if (otlp && !key) {
        rc = s_put_u32(body, NO_KEY) || s_put_otlp(format, lane, records, count, body);
    }
    for (size_t i = 0; rc == 0 && (key || !otlp) && i < count; i++) {
        rc = s_put_key(key, body, &records[i]);
        rc = rc ? rc : otlp ? s_put_otlp(format, lane, &records[i], 1, body) : s_put_record(format, &records[i], body);
    }
    return rc;
}

bool drv_kafka_body_next(drv_kafka_reading_t *r, drv_kafka_message_t *message)
{
    uint32_t len;
    if (r->end - r->at < (ptrdiff_t)sizeof len) {
        return false;
    }
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
