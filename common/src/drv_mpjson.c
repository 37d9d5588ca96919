/*  drv_mpjson — jansson values to and from msgpack.
    What comes in must be what a JSON document could hold (docs/security.md):
    strings valid UTF-8 without NUL, string keys, no duplicate keys; `bin`
    and extension types are refused with the path of the field. Depth is
    bounded so that a hostile frame cannot exhaust the stack. */
#include "drover/drv_mpjson.h"
#include "drv_mpjson_internal.h"
#include "drover/drv_mpcheck.h"
#include "drover/drv_utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

int drv_mpjson_pack(msgpack_packer *pk, const json_t *value)
{
    switch (json_typeof(value)) {
    case JSON_OBJECT: {
        const char *key;
        json_t *member;
        if (msgpack_pack_map(pk, json_object_size(value)) != 0) {
            return -1;
        }
        json_object_foreach((json_t *)value, key, member)
        {
            size_t len = strlen(key);
            if (msgpack_pack_str(pk, len) || msgpack_pack_str_body(pk, key, len) || drv_mpjson_pack(pk, member)) {
                return -1;
            }
        }
        return 0;
    }
    case JSON_ARRAY: {
        size_t index;
        json_t *item;
        if (msgpack_pack_array(pk, json_array_size(value)) != 0) {
            return -1;
        }
        json_array_foreach(value, index, item)
        {
            if (drv_mpjson_pack(pk, item)) {
                return -1;
            }
        }
        return 0;
    }
    case JSON_STRING: {
        size_t len = json_string_length(value);
        return msgpack_pack_str(pk, len) || msgpack_pack_str_body(pk, json_string_value(value), len) ? -1 : 0;
    }
    case JSON_INTEGER:
        return msgpack_pack_int64(pk, json_integer_value(value));
    case JSON_REAL:
        return msgpack_pack_double(pk, json_real_value(value));
    case JSON_TRUE:
        return msgpack_pack_true(pk);
    case JSON_FALSE:
        return msgpack_pack_false(pk);
    case JSON_NULL:
        return msgpack_pack_nil(pk);
    }
    return -1;
}

int drv_mpjson_object(const json_t *value, msgpack_zone *zone, int depth, msgpack_object *out)
{
    memset(out, 0, sizeof *out);
    switch (json_typeof(value)) {
    case JSON_OBJECT: {
        if (depth < 1) {
            return -2;
        }
        size_t n = json_object_size(value), i = 0;
        msgpack_object_kv *pairs = n ? msgpack_zone_malloc(zone, n * sizeof *pairs) : NULL;
        if (n && !pairs) {
            return -1;
        }
        const char *key;
        json_t *member;
        json_object_foreach((json_t *)value, key, member)
        {
            pairs[i].key = (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)strlen(key), key}};
            int rc = drv_mpjson_object(member, zone, depth - 1, &pairs[i].val);
            if (rc != 0) {
                return rc;
            }
            i++;
        }
        out->type = MSGPACK_OBJECT_MAP;
        out->via.map = (msgpack_object_map){(uint32_t)i, pairs};
        return 0;
    }
    case JSON_ARRAY: {
        if (depth < 1) {
            return -2;
        }
        size_t n = json_array_size(value);
        msgpack_object *items = n ? msgpack_zone_malloc(zone, n * sizeof *items) : NULL;
        if (n && !items) {
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            int rc = drv_mpjson_object(json_array_get(value, i), zone, depth - 1, &items[i]);
            if (rc != 0) {
                return rc;
            }
        }
        out->type = MSGPACK_OBJECT_ARRAY;
        out->via.array = (msgpack_object_array){(uint32_t)n, items};
        return 0;
    }
    case JSON_STRING:
        out->type = MSGPACK_OBJECT_STR;
        out->via.str = (msgpack_object_str){(uint32_t)json_string_length(value), json_string_value(value)};
        return 0;
    case JSON_INTEGER: {
        json_int_t v = json_integer_value(value);
        out->type = v >= 0 ? MSGPACK_OBJECT_POSITIVE_INTEGER : MSGPACK_OBJECT_NEGATIVE_INTEGER;
        if (v >= 0) {
            out->via.u64 = (uint64_t)v;
        } else {
            out->via.i64 = v;
        }
        return 0;
    }
    case JSON_REAL:
        out->type = MSGPACK_OBJECT_FLOAT64;
        out->via.f64 = json_real_value(value);
        return 0;
    case JSON_TRUE:
    case JSON_FALSE:
        out->type = MSGPACK_OBJECT_BOOLEAN;
        out->via.boolean = json_is_true(value);
        return 0;
    case JSON_NULL:
        out->type = MSGPACK_OBJECT_NIL;
        return 0;
    }
    return -1;
}

//  path names the value being decoded ("" at the top), so that a refusal
//  says which field was wrong: "body.pipeline.nodes.in.config.endpoint".
static json_t *s_from_object(const msgpack_object *obj, int depth, char *path, size_t pathlen, char *err, size_t errlen)
{
    const char *where = path[0] ? path : "(top)";
    if (depth > MAX_DEPTH) {
        snprintf(err, errlen, "%s: nested deeper than %d levels", where, MAX_DEPTH);
        return NULL;
    }
    switch (obj->type) {
    case MSGPACK_OBJECT_NIL:
        return json_null();
    case MSGPACK_OBJECT_BOOLEAN:
        return json_boolean(obj->via.boolean);
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        if (obj->via.u64 > (uint64_t)INT64_MAX) {
            snprintf(err, errlen, "%s: integer %llu out of range", where, (unsigned long long)obj->via.u64);
            return NULL;
        }
        return json_integer((json_int_t)obj->via.u64);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return json_integer((json_int_t)obj->via.i64);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        return json_real(obj->via.f64);
    case MSGPACK_OBJECT_STR:
        if (!drv_utf8_valid(obj->via.str.ptr, obj->via.str.size, false)) {
            snprintf(err, errlen, "%s: string is not valid UTF-8 without NUL", where);
            return NULL;
        }
        return json_stringn_nocheck(obj->via.str.ptr, obj->via.str.size);
    case MSGPACK_OBJECT_BIN:
        snprintf(err, errlen, "%s: binary values are not allowed (send a string)", where);
        return NULL;
    case MSGPACK_OBJECT_ARRAY: {
        json_t *array = json_array();
        size_t base = strlen(path);
        for (uint32_t i = 0; i < obj->via.array.size; i++) {
            snprintf(path + base, pathlen - base, "[%u]", i);
            json_t *item = s_from_object(&obj->via.array.ptr[i], depth + 1, path, pathlen, err, errlen);
            path[base] = 0;
            if (!item) {
                json_decref(array);
                return NULL;
            }
            json_array_append_new(array, item);
        }
        return array;
    }
    case MSGPACK_OBJECT_MAP: {
        json_t *object = json_object();
        size_t base = strlen(path);
        for (uint32_t i = 0; i < obj->via.map.size; i++) {
            const msgpack_object_kv *kv = &obj->via.map.ptr[i];
            if (kv->key.type != MSGPACK_OBJECT_STR) {
                snprintf(err, errlen, "%s: map key is not a string", where);
                json_decref(object);
                return NULL;
            }
            char key[256];
            if (kv->key.via.str.size >= sizeof key) {
                snprintf(err, errlen, "%s: map key longer than %zu bytes", where, sizeof key - 1);
                json_decref(object);
                return NULL;
            }
            if (!drv_utf8_valid(kv->key.via.str.ptr, kv->key.via.str.size, false)) {
                snprintf(err, errlen, "%s: map key is not valid UTF-8 without NUL", where);
                json_decref(object);
                return NULL;
            }
            if (kv->key.via.str.size > 0) { // msgpack-c leaves ptr NULL for ""
                memcpy(key, kv->key.via.str.ptr, kv->key.via.str.size);
            }
            key[kv->key.via.str.size] = 0;
            if (json_object_get(object, key)) {
                snprintf(err, errlen, "%s: duplicate key \"%s\"", where, key);
                json_decref(object);
                return NULL;
            }
            snprintf(path + base, pathlen - base, "%s%s", base ? "." : "", key);
            json_t *member = s_from_object(&kv->val, depth + 1, path, pathlen, err, errlen);
            path[base] = 0;
            if (!member) {
                json_decref(object);
                return NULL;
            }
            json_object_set_new_nocheck(object, key, member);
        }
        return object;
    }
    default:
        snprintf(err, errlen, "%s: unsupported msgpack type %d", where, (int)obj->type);
        return NULL;
    }
}

json_t *drv_mpjson_from_object(const msgpack_object *obj, const char *prefix, char *err, size_t errlen)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", prefix ? prefix : "");
    return s_from_object(obj, 0, path, sizeof path, err, errlen);
}

int drv_mpjson_encode(const json_t *value, char **data, size_t *size)
{
    msgpack_sbuffer sbuf;
    msgpack_sbuffer_init(&sbuf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
    if (drv_mpjson_pack(&pk, value) != 0) {
        msgpack_sbuffer_destroy(&sbuf);
        return -1;
    }
    *size = sbuf.size;
    *data = msgpack_sbuffer_release(&sbuf);
    return 0;
}

json_t *drv_mpjson_decode(const void *data, size_t size, char *err, size_t errlen)
{
    msgpack_zone zone;
    if (!msgpack_zone_init(&zone, 2048)) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    msgpack_object obj;
    size_t offset = 0;
    json_t *result = NULL;
    if (drv_mpcheck(data, size, err, errlen) != 0) {
        // err says why
    } else if (msgpack_unpack(data, size, &offset, &zone, &obj) == MSGPACK_UNPACK_SUCCESS) {
        result = drv_mpjson_from_object(&obj, NULL, err, errlen);
    } else {
        snprintf(err, errlen, "malformed msgpack");
    }
    msgpack_zone_destroy(&zone);
    return result;
}
