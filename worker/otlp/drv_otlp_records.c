/*  drv_otlp_records — see drv_otlp_records.h. */
#include "drv_otlp_records.h"
#include "drv_record.h"

#include "drover/drv_mpcheck.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SORT_FROM 16 // more keys than this are checked by sorting, not pair by pair

//  ---------------------------------------------------------------- checks

static int s_key_cmp(const void *a, const void *b)
{
    return strcmp((*(otlp_kv_t *const *)a)->key, (*(otlp_kv_t *const *)b)->key);
}

static bool s_any_unique(const otlp_any_t *v, const char **dup);

//  True when no two keys of kv are the same, nor in any kvlist inside;
//  else *dup is the first repeated key found.
static bool s_unique(otlp_kv_t *const *kv, size_t n, const char **dup)
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
        if (!s_any_unique(kv[i]->value, dup)) {
            return false;
        }
    }
    return true;
}

static bool s_any_unique(const otlp_any_t *v, const char **dup)
{
    if (!v) {
        return true;
    }
    if (v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_KVLIST_VALUE && v->kvlist_value) {
        return s_unique(v->kvlist_value->values, v->kvlist_value->n_values, dup);
    }
    if (v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE && v->array_value) {
        for (size_t i = 0; i < v->array_value->n_values; i++) {
            if (!s_any_unique(v->array_value->values[i], dup)) {
                return false;
            }
        }
    }
    return true;
}

//  ---------------------------------------------------------------- objects

//  Records are built as msgpack objects in the batch zone, never packed:
//  strings and bytes point into the request (which outlives the forward),
//  each resource and scope is built once and shared by its records.
typedef struct {
    msgpack_zone *zone;
    bool no_memory;
    bool too_deep;            // a value would nest deeper than records may
} build_t;

#define STR(s) ((msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)(sizeof(s) - 1), (s)}})

static msgpack_object s_str(const char *s)
{
    return (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {s ? (uint32_t)strlen(s) : 0, s ? s : ""}};
}

static msgpack_object s_uint(uint64_t v)
{
    return (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = v};
}

static msgpack_object s_int(int64_t v)
{
    return v >= 0 ? s_uint((uint64_t)v) : (msgpack_object){.type = MSGPACK_OBJECT_NEGATIVE_INTEGER, .via.i64 = v};
}

static msgpack_object s_map(msgpack_object_kv *pairs, size_t n)
{
    return (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {pairs ? (uint32_t)n : 0, pairs}};
}

static msgpack_object s_array(msgpack_object *items, size_t n)
{
    return (msgpack_object){.type = MSGPACK_OBJECT_ARRAY, .via.array = {items ? (uint32_t)n : 0, items}};
}

static void *s_take(build_t *b, size_t size)
{
    void *p = size ? msgpack_zone_malloc(b->zone, size) : NULL;
    if (size && !p) {
        b->no_memory = true;
    }
    return p;
}

static msgpack_object s_hex(build_t *b, ProtobufCBinaryData id)
{
    static const char digits[] = "0123456789abcdef";
    size_t n = id.len > 64 ? 64 : id.len;
    char *text = s_take(b, 2 * n);
    if (!text) {
        return STR("");
    }
    for (size_t i = 0; i < n; i++) {
        text[2 * i] = digits[id.data[i] >> 4];
        text[2 * i + 1] = digits[id.data[i] & 15];
    }
    return (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)(2 * n), text}};
}

static msgpack_object s_attributes(build_t *b, otlp_kv_t *const *kv, size_t n, int depth);

//  v as an object at depth (the record itself is at 1).
static msgpack_object s_any(build_t *b, const otlp_any_t *v, int depth)
{
    if (depth > DRV_MPCHECK_MAX_DEPTH) {
        b->too_deep = true;
        return (msgpack_object){.type = MSGPACK_OBJECT_NIL};
    }
    switch (v ? v->value_case : OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE__NOT_SET) {
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
        return s_str(v->string_value);
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
        return (msgpack_object){.type = MSGPACK_OBJECT_BOOLEAN, .via.boolean = v->bool_value};
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
        return s_int(v->int_value);
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
        return (msgpack_object){.type = MSGPACK_OBJECT_FLOAT64, .via.f64 = v->double_value};
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE: {
        size_t n = v->array_value ? v->array_value->n_values : 0;
        msgpack_object *items = s_take(b, n * sizeof *items);
        for (size_t i = 0; items && i < n; i++) {
            items[i] = s_any(b, v->array_value->values[i], depth + 1);
        }
        return s_array(items, n);
    }
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_KVLIST_VALUE:
        return s_attributes(b, v->kvlist_value ? v->kvlist_value->values : NULL,
                            v->kvlist_value ? v->kvlist_value->n_values : 0, depth);
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BYTES_VALUE:
        return (msgpack_object){.type = MSGPACK_OBJECT_BIN,
                                .via.bin = {(uint32_t)v->bytes_value.len, (const char *)v->bytes_value.data}};
    default:
        return (msgpack_object){.type = MSGPACK_OBJECT_NIL};
    }
}

//  A map at depth.
static msgpack_object s_attributes(build_t *b, otlp_kv_t *const *kv, size_t n, int depth)
{
    msgpack_object_kv *pairs = s_take(b, n * sizeof *pairs);
    for (size_t i = 0; pairs && i < n; i++) {
        pairs[i].key = s_str(kv[i]->key);
        pairs[i].val = s_any(b, kv[i]->value, depth + 1);
    }
    return s_map(pairs, n);
}

//  What every record of a resource and scope carries.
typedef struct {
    const otlp_resource_t *resource;
    const char *resource_schema_url;
    const otlp_scope_t *scope;
} context_t;

#define CONTEXT_PAIRS 3

//  The context's three pairs, built once per resource and scope and copied
//  (shallowly: the maps are shared) into each of their records.
static void s_context(build_t *b, const context_t *c, msgpack_object_kv out[CONTEXT_PAIRS])
{
    msgpack_object_kv *scope = s_take(b, 3 * sizeof *scope);
    out[0] = (msgpack_object_kv){STR("resource"), s_attributes(b, c->resource ? c->resource->attributes : NULL,
                                                               c->resource ? c->resource->n_attributes : 0, 2)};
    out[1] = (msgpack_object_kv){STR("resource_schema_url"), s_str(c->resource_schema_url)};
    if (scope) {
        scope[0] = (msgpack_object_kv){STR("name"), s_str(c->scope ? c->scope->name : "")};
        scope[1] = (msgpack_object_kv){STR("version"), s_str(c->scope ? c->scope->version : "")};
        scope[2] = (msgpack_object_kv){STR("attributes"), s_attributes(b, c->scope ? c->scope->attributes : NULL,
                                                                       c->scope ? c->scope->n_attributes : 0, 3)};
    }
    out[2] = (msgpack_object_kv){STR("scope"), s_map(scope, 3)};
}

static bool s_context_unique(context_t *c, const char **dup)
{
    return (!c->resource || s_unique(c->resource->attributes, c->resource->n_attributes, dup)) &&
           (!c->scope || s_unique(c->scope->attributes, c->scope->n_attributes, dup));
}

//  A record of the n pairs in pairs (room for the context's after them).
static msgpack_object s_record(msgpack_object_kv *pairs, size_t n, const msgpack_object_kv *context)
{
    if (pairs) {
        memcpy(pairs + n, context, CONTEXT_PAIRS * sizeof *pairs);
    }
    return s_map(pairs, n + CONTEXT_PAIRS);
}

static msgpack_object s_log(build_t *b, const otlp_log_t *log, const msgpack_object_kv *context)
{
    bool event = log->event_name && log->event_name[0];
    size_t n = 10 + (event ? 1 : 0);
    msgpack_object_kv *p = s_take(b, (n + CONTEXT_PAIRS) * sizeof *p);
    if (p) {
        p[0] = (msgpack_object_kv){STR("signal"), STR("log")};
        p[1] = (msgpack_object_kv){STR("time_unix_nano"), s_uint(log->time_unix_nano)};
        p[2] = (msgpack_object_kv){STR("observed_time_unix_nano"), s_uint(log->observed_time_unix_nano)};
        p[3] = (msgpack_object_kv){STR("severity_number"), s_int(log->severity_number)};
        p[4] = (msgpack_object_kv){STR("severity_text"), s_str(log->severity_text)};
        p[5] = (msgpack_object_kv){STR("body"), s_any(b, log->body, 2)};
        p[6] = (msgpack_object_kv){STR("attributes"), s_attributes(b, log->attributes, log->n_attributes, 2)};
        p[7] = (msgpack_object_kv){STR("trace_id"), s_hex(b, log->trace_id)};
        p[8] = (msgpack_object_kv){STR("span_id"), s_hex(b, log->span_id)};
        p[9] = (msgpack_object_kv){STR("flags"), s_uint(log->flags)};
        if (event) {
            p[10] = (msgpack_object_kv){STR("event_name"), s_str(log->event_name)};
        }
    }
    return s_record(p, n, context);
}

//  A span's events or links: maps of three pairs each.
static msgpack_object s_event(build_t *b, const otlp_event_t *e)
{
    msgpack_object_kv *p = s_take(b, 3 * sizeof *p);
    if (p) {
        p[0] = (msgpack_object_kv){STR("time_unix_nano"), s_uint(e->time_unix_nano)};
        p[1] = (msgpack_object_kv){STR("name"), s_str(e->name)};
        p[2] = (msgpack_object_kv){STR("attributes"), s_attributes(b, e->attributes, e->n_attributes, 4)};
    }
    return s_map(p, 3);
}

static msgpack_object s_link(build_t *b, const otlp_link_t *l)
{
    msgpack_object_kv *p = s_take(b, 3 * sizeof *p);
    if (p) {
        p[0] = (msgpack_object_kv){STR("trace_id"), s_hex(b, l->trace_id)};
        p[1] = (msgpack_object_kv){STR("span_id"), s_hex(b, l->span_id)};
        p[2] = (msgpack_object_kv){STR("attributes"), s_attributes(b, l->attributes, l->n_attributes, 4)};
    }
    return s_map(p, 3);
}

static msgpack_object s_span(build_t *b, const otlp_span_t *span, const msgpack_object_kv *context)
{
    msgpack_object_kv *p = s_take(b, (13 + CONTEXT_PAIRS) * sizeof *p);
    msgpack_object *events = s_take(b, span->n_events * sizeof *events);
    msgpack_object *links = s_take(b, span->n_links * sizeof *links);
    msgpack_object_kv *status = s_take(b, 2 * sizeof *status);
    if (!p || !status) {
        return (msgpack_object){.type = MSGPACK_OBJECT_NIL}; // out of memory: the whole request is refused
    }
    for (size_t i = 0; events && i < span->n_events; i++) {
        events[i] = s_event(b, span->events[i]);
    }
    for (size_t i = 0; links && i < span->n_links; i++) {
        links[i] = s_link(b, span->links[i]);
    }
    status[0] = (msgpack_object_kv){STR("code"), s_int(span->status ? span->status->code : 0)};
    status[1] = (msgpack_object_kv){STR("message"), s_str(span->status ? span->status->message : "")};
    p[0] = (msgpack_object_kv){STR("signal"), STR("span")};
    p[1] = (msgpack_object_kv){STR("trace_id"), s_hex(b, span->trace_id)};
    p[2] = (msgpack_object_kv){STR("span_id"), s_hex(b, span->span_id)};
    p[3] = (msgpack_object_kv){STR("parent_span_id"), s_hex(b, span->parent_span_id)};
    p[4] = (msgpack_object_kv){STR("trace_state"), s_str(span->trace_state)};
    p[5] = (msgpack_object_kv){STR("name"), s_str(span->name)};
    p[6] = (msgpack_object_kv){STR("kind"), s_int(span->kind)};
    p[7] = (msgpack_object_kv){STR("start_time_unix_nano"), s_uint(span->start_time_unix_nano)};
    p[8] = (msgpack_object_kv){STR("end_time_unix_nano"), s_uint(span->end_time_unix_nano)};
    p[9] = (msgpack_object_kv){STR("attributes"), s_attributes(b, span->attributes, span->n_attributes, 2)};
    p[10] = (msgpack_object_kv){STR("events"), s_array(events, span->n_events)};
    p[11] = (msgpack_object_kv){STR("links"), s_array(links, span->n_links)};
    p[12] = (msgpack_object_kv){STR("status"), s_map(status, 2)};
    return s_record(p, 13, context);
}

static bool s_span_unique(const otlp_span_t *span, const char **dup)
{
    if (!s_unique(span->attributes, span->n_attributes, dup)) {
        return false;
    }
    for (size_t i = 0; i < span->n_events; i++) {
        if (!s_unique(span->events[i]->attributes, span->events[i]->n_attributes, dup)) {
            return false;
        }
    }
    for (size_t i = 0; i < span->n_links; i++) {
        if (!s_unique(span->links[i]->attributes, span->links[i]->n_attributes, dup)) {
            return false;
        }
    }
    return true;
}

//  ---------------------------------------------------------------- requests

typedef struct {
    build_t b;
    msgpack_object *records;
    uint32_t count;
    int64_t *rejected;
    char *why;
    size_t whylen;
} walk_t;

static void s_reject(walk_t *w, size_t n, const char *what, const char *dup)
{
    if (n > 0 && *w->rejected == 0) {
        snprintf(w->why, w->whylen, "%s has the key \"%.100s\" twice", what, dup);
    }
    *w->rejected += (int64_t)n;
}

size_t drv_otlp_count(const drv_otlp_request_t *r)
{
    size_t count = 0;
    if (r->signal == DRV_OTLP_LOGS) {
        for (size_t i = 0; i < r->logs->n_resource_logs; i++) {
            for (size_t k = 0; k < r->logs->resource_logs[i]->n_scope_logs; k++) {
                count += r->logs->resource_logs[i]->scope_logs[k]->n_log_records;
            }
        }
    } else {
        for (size_t i = 0; i < r->traces->n_resource_spans; i++) {
            for (size_t k = 0; k < r->traces->resource_spans[i]->n_scope_spans; k++) {
                count += r->traces->resource_spans[i]->scope_spans[k]->n_spans;
            }
        }
    }
    return count;
}

static void s_logs(walk_t *w, const otlp_logs_request_t *req)
{
    for (size_t r = 0; r < req->n_resource_logs; r++) {
        const otlp_resource_logs_t *rl = req->resource_logs[r];
        for (size_t s = 0; s < rl->n_scope_logs; s++) {
            const otlp_scope_logs_t *sl = rl->scope_logs[s];
            context_t c = {rl->resource, rl->schema_url, sl->scope};
            const char *dup = NULL;
            if (!s_context_unique(&c, &dup)) {
                s_reject(w, sl->n_log_records, "a resource or scope", dup);
                continue;
            }
            msgpack_object_kv context[CONTEXT_PAIRS];
            s_context(&w->b, &c, context);
            for (size_t i = 0; i < sl->n_log_records; i++) {
                const otlp_log_t *log = sl->log_records[i];
                if (!s_unique(log->attributes, log->n_attributes, &dup) || !s_any_unique(log->body, &dup)) {
                    s_reject(w, 1, "a log record", dup);
                    continue;
                }
                w->records[w->count++] = s_log(&w->b, log, context);
            }
        }
    }
}

static void s_traces(walk_t *w, const otlp_traces_request_t *req)
{
    for (size_t r = 0; r < req->n_resource_spans; r++) {
        const otlp_resource_spans_t *rs = req->resource_spans[r];
        for (size_t s = 0; s < rs->n_scope_spans; s++) {
            const otlp_scope_spans_t *ss = rs->scope_spans[s];
            context_t c = {rs->resource, rs->schema_url, ss->scope};
            const char *dup = NULL;
            if (!s_context_unique(&c, &dup)) {
                s_reject(w, ss->n_spans, "a resource or scope", dup);
                continue;
            }
            msgpack_object_kv context[CONTEXT_PAIRS];
            s_context(&w->b, &c, context);
            for (size_t i = 0; i < ss->n_spans; i++) {
                if (!s_span_unique(ss->spans[i], &dup)) {
                    s_reject(w, 1, "a span", dup);
                    continue;
                }
                w->records[w->count++] = s_span(&w->b, ss->spans[i], context);
            }
        }
    }
}

int drv_otlp_to_objects(const drv_otlp_request_t *request, msgpack_zone *zone, msgpack_object **records,
                        int64_t *rejected, char *why, size_t whylen)
{
    *rejected = 0;
    *records = NULL;
    if (whylen) {
        why[0] = 0;
    }
    walk_t w = {.b = {.zone = zone}, .rejected = rejected, .why = why, .whylen = whylen};
    size_t count = drv_otlp_count(request);
    if (count > INT32_MAX) {
        return DRV_OTLP_NO_MEMORY;
    }
    w.records = s_take(&w.b, count * sizeof *w.records);
    if (count && !w.records) {
        return DRV_OTLP_NO_MEMORY;
    }
    if (request->signal == DRV_OTLP_LOGS) {
        s_logs(&w, request->logs);
    } else {
        s_traces(&w, request->traces);
    }
    if (w.b.no_memory) {
        return DRV_OTLP_NO_MEMORY;
    }
    if (w.b.too_deep) {
        snprintf(why, whylen, "a record would nest deeper than %d levels", DRV_MPCHECK_MAX_DEPTH);
        return -1;
    }
    *records = w.records;
    return (int)w.count;
}
