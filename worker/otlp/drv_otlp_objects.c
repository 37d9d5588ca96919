/*  drv_otlp_objects — the objects every OTLP mapping builds (see
    drv_otlp_records_internal.h): values, attributes, the checks of keys,
    the resource and scope context, the walk's rejections. */
#include "drv_otlp_records_internal.h"

#include "drover/drv_mpcheck.h"

#include <stdio.h>
#include <stdlib.h>

#define SORT_FROM 16 // more keys than this are checked by sorting, not pair by pair

//  ---------------------------------------------------------------- checks

static int s_key_cmp(const void *a, const void *b)
{
    return strcmp((*(otlp_kv_t *const *)a)->key, (*(otlp_kv_t *const *)b)->key);
}

//  True when no two keys of kv are the same, nor in any kvlist inside;
//  else *dup is the first repeated key found.
bool drv_otlp_obj_unique(otlp_kv_t *const *kv, size_t n, const char **dup)
{
    if (n > SORT_FROM) {
        otlp_kv_t **sorted = malloc(n * sizeof *sorted);
        if (!sorted) {
            *dup = "(out of memory)";
            return false;
        }
        memcpy(sorted, kv, n * sizeof *sorted);
        qsort(sorted, n, sizeof *sorted, s_key_cmp);
        for (size_t i = 1; i < n; i++) {
            if (!strcmp(sorted[i]->key, sorted[i - 1]->key)) {
                *dup = sorted[i]->key;
                free(sorted);
                return false;
            }
        }
        free(sorted);
    } else {
        for (size_t i = 0; i < n; i++) {
            for (size_t k = 0; k < i; k++) {
                if (!strcmp(kv[i]->key, kv[k]->key)) {
                    *dup = kv[i]->key;
                    return false;
                }
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!drv_otlp_obj_any_unique(kv[i]->value, dup)) {
            return false;
        }
    }
    return true;
}

bool drv_otlp_obj_any_unique(const otlp_any_t *v, const char **dup)
{
    if (!v) {
        return true;
    }
    if (v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_KVLIST_VALUE && v->kvlist_value) {
        return drv_otlp_obj_unique(v->kvlist_value->values, v->kvlist_value->n_values, dup);
    }
    if (v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE && v->array_value) {
        for (size_t i = 0; i < v->array_value->n_values; i++) {
            if (!drv_otlp_obj_any_unique(v->array_value->values[i], dup)) {
                return false;
            }
        }
    }
    return true;
}

//  ---------------------------------------------------------------- objects

msgpack_object drv_otlp_obj_hex(drv_otlp_objects_t *b, ProtobufCBinaryData id)
{
    static const char digits[] = "0123456789abcdef";
    size_t n = id.len > 64 ? 64 : id.len;
    char *text = drv_otlp_obj_take(b, 2 * n);
    if (!text) {
        return STR("");
    }
    for (size_t i = 0; i < n; i++) {
        text[2 * i] = digits[id.data[i] >> 4];
        text[2 * i + 1] = digits[id.data[i] & 15];
    }
    return (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)(2 * n), text}};
}

//  v as an object at depth (the record itself is at 1).
msgpack_object drv_otlp_obj_any(drv_otlp_objects_t *b, const otlp_any_t *v, int depth)
{
    if (depth > DRV_MPCHECK_MAX_DEPTH) {
        b->too_deep = true;
        return (msgpack_object){.type = MSGPACK_OBJECT_NIL};
    }
    switch (v ? v->value_case : OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE__NOT_SET) {
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
        return drv_otlp_obj_str(v->string_value);
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
        return (msgpack_object){.type = MSGPACK_OBJECT_BOOLEAN, .via.boolean = v->bool_value};
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
        return drv_otlp_obj_int(v->int_value);
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
        return (msgpack_object){.type = MSGPACK_OBJECT_FLOAT64, .via.f64 = v->double_value};
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE: {
        size_t n = v->array_value ? v->array_value->n_values : 0;
        msgpack_object *items = drv_otlp_obj_take(b, n * sizeof *items);
        for (size_t i = 0; items && i < n; i++) {
            items[i] = drv_otlp_obj_any(b, v->array_value->values[i], depth + 1);
        }
        return drv_otlp_obj_array(items, n);
    }
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_KVLIST_VALUE:
        return drv_otlp_obj_attributes(b, v->kvlist_value ? v->kvlist_value->values : NULL,
                                       v->kvlist_value ? v->kvlist_value->n_values : 0, depth);
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BYTES_VALUE:
        return (msgpack_object){.type = MSGPACK_OBJECT_BIN,
                                .via.bin = {(uint32_t)v->bytes_value.len, (const char *)v->bytes_value.data}};
    default:
        return (msgpack_object){.type = MSGPACK_OBJECT_NIL};
    }
}

//  A map at depth.
msgpack_object drv_otlp_obj_attributes(drv_otlp_objects_t *b, otlp_kv_t *const *kv, size_t n, int depth)
{
    msgpack_object_kv *pairs = drv_otlp_obj_take(b, n * sizeof *pairs);
    for (size_t i = 0; pairs && i < n; i++) {
        pairs[i].key = drv_otlp_obj_str(kv[i]->key);
        pairs[i].val = drv_otlp_obj_any(b, kv[i]->value, depth + 1);
    }
    return drv_otlp_obj_map(pairs, n);
}

//  The context's three pairs, built once per resource and scope and copied
//  (shallowly: the maps are shared) into each of their records.
void drv_otlp_obj_context(drv_otlp_objects_t *b, const drv_otlp_context_t *c, msgpack_object_kv out[CONTEXT_PAIRS])
{
    msgpack_object_kv *scope = drv_otlp_obj_take(b, 3 * sizeof *scope);
    out[0] =
        (msgpack_object_kv){STR("resource"), drv_otlp_obj_attributes(b, c->resource ? c->resource->attributes : NULL,
                                                                     c->resource ? c->resource->n_attributes : 0, 2)};
    out[1] = (msgpack_object_kv){STR("resource_schema_url"), drv_otlp_obj_str(c->resource_schema_url)};
    if (scope) {
        scope[0] = (msgpack_object_kv){STR("name"), drv_otlp_obj_str(c->scope ? c->scope->name : "")};
        scope[1] = (msgpack_object_kv){STR("version"), drv_otlp_obj_str(c->scope ? c->scope->version : "")};
        scope[2] =
            (msgpack_object_kv){STR("attributes"), drv_otlp_obj_attributes(b, c->scope ? c->scope->attributes : NULL,
                                                                           c->scope ? c->scope->n_attributes : 0, 3)};
    }
    out[2] = (msgpack_object_kv){STR("scope"), drv_otlp_obj_map(scope, 3)};
}

bool drv_otlp_obj_context_unique(drv_otlp_context_t *c, const char **dup)
{
    return (!c->resource || drv_otlp_obj_unique(c->resource->attributes, c->resource->n_attributes, dup)) &&
           (!c->scope || drv_otlp_obj_unique(c->scope->attributes, c->scope->n_attributes, dup));
}

//  A record of the n pairs in pairs (room for the context's after them).
msgpack_object drv_otlp_obj_record(msgpack_object_kv *pairs, size_t n, const msgpack_object_kv *context)
{
    if (pairs) {
        memcpy(pairs + n, context, CONTEXT_PAIRS * sizeof *pairs);
    }
    return drv_otlp_obj_map(pairs, n + CONTEXT_PAIRS);
}

void drv_otlp_obj_reject(drv_otlp_walk_t *w, size_t n, const char *what, const char *dup)
{
    if (n > 0 && *w->rejected == 0) {
        snprintf(w->why, w->whylen, "%s has the key \"%.100s\" twice", what, dup);
    }
    *w->rejected += (int64_t)n;
}
