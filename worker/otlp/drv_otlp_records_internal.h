/*  drv_otlp_records_internal — what the OTLP-to-records mappings share
    (drv_otlp_records.c: logs and spans; drv_otlp_metrics.c: metrics): the
    objects they build in the batch zone, the checks of keys, the resource
    and scope every record carries, and the walk over a request. Built by
    drv_otlp_objects.c. Private to worker/otlp/. */
#ifndef DRV_OTLP_RECORDS_INTERNAL_H
#define DRV_OTLP_RECORDS_INTERNAL_H

#include "drv_otlp_records.h"

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

//  Records are built as msgpack objects in the batch zone, never packed:
//  strings and bytes point into the request (which outlives the forward),
//  each resource and scope is built once and shared by its records.
typedef struct {
    msgpack_zone *zone;
    bool no_memory;
    bool too_deep; // a value would nest deeper than records may
} drv_otlp_objects_t;

#define STR(s) ((msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)(sizeof(s) - 1), (s)}})

static inline msgpack_object drv_otlp_obj_str(const char *s)
{
    return (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {s ? (uint32_t)strlen(s) : 0, s ? s : ""}};
}

static inline msgpack_object drv_otlp_obj_uint(uint64_t v)
{
    return (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = v};
}

static inline msgpack_object drv_otlp_obj_int(int64_t v)
{
    return v >= 0 ? drv_otlp_obj_uint((uint64_t)v)
                  : (msgpack_object){.type = MSGPACK_OBJECT_NEGATIVE_INTEGER, .via.i64 = v};
}

static inline msgpack_object drv_otlp_obj_map(msgpack_object_kv *pairs, size_t n)
{
    return (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {pairs ? (uint32_t)n : 0, pairs}};
}

static inline msgpack_object drv_otlp_obj_array(msgpack_object *items, size_t n)
{
    return (msgpack_object){.type = MSGPACK_OBJECT_ARRAY, .via.array = {items ? (uint32_t)n : 0, items}};
}

static inline void *drv_otlp_obj_take(drv_otlp_objects_t *b, size_t size)
{
    void *p = size ? msgpack_zone_malloc(b->zone, size) : NULL;
    if (size && !p) {
        b->no_memory = true;
    }
    return p;
}

//  An id's bytes as lowercase hex (at most 64 bytes of it).
msgpack_object drv_otlp_obj_hex(drv_otlp_objects_t *b, ProtobufCBinaryData id);
//  v as an object at depth (the record itself is at 1).
msgpack_object drv_otlp_obj_any(drv_otlp_objects_t *b, const otlp_any_t *v, int depth);
//  A map at depth.
msgpack_object drv_otlp_obj_attributes(drv_otlp_objects_t *b, otlp_kv_t *const *kv, size_t n, int depth);

//  True when no two keys of kv are the same, nor in any kvlist inside;
//  else *dup is the first repeated key found.
bool drv_otlp_obj_unique(otlp_kv_t *const *kv, size_t n, const char **dup);
bool drv_otlp_obj_any_unique(const otlp_any_t *v, const char **dup);

//  What every record of a resource and scope carries.
typedef struct {
    const otlp_resource_t *resource;
    const char *resource_schema_url;
    const otlp_scope_t *scope;
} drv_otlp_context_t;

#define CONTEXT_PAIRS 3

//  The context's three pairs, built once per resource and scope and copied
//  (shallowly: the maps are shared) into each of their records.
void drv_otlp_obj_context(drv_otlp_objects_t *b, const drv_otlp_context_t *c, msgpack_object_kv out[CONTEXT_PAIRS]);
bool drv_otlp_obj_context_unique(drv_otlp_context_t *c, const char **dup);
//  A record of the n pairs in pairs (room for the context's after them).
msgpack_object drv_otlp_obj_record(msgpack_object_kv *pairs, size_t n, const msgpack_object_kv *context);

//  A walk over a request, filling records.
typedef struct {
    drv_otlp_objects_t b;
    msgpack_object *records;
    uint32_t count;
    int64_t *rejected;
    char *why;
    size_t whylen;
    uint64_t observed_ns; // the request's (drv_otlp_request_t)
} drv_otlp_walk_t;

//  n records left out: *rejected counts them, why names the first reason.
void drv_otlp_obj_reject(drv_otlp_walk_t *w, size_t n, const char *what, const char *dup);

//  drv_otlp_metrics.c: a metrics request's data points, and how many.
void drv_otlp_metrics_walk(drv_otlp_walk_t *w, const otlp_metrics_request_t *req);
size_t drv_otlp_metrics_count(const otlp_metrics_request_t *req);

#endif
