/*  drv_otlp_records — see drv_otlp_records.h. */
#include "drv_otlp_records.h"
#include "drv_pbcheck.h"
#include "drv_record.h"

#include "drover/drv_arena.h"

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

//  ---------------------------------------------------------------- packing

static void s_str(msgpack_packer *pk, const char *s)
{
    size_t len = s ? strlen(s) : 0;
    msgpack_pack_str(pk, len);
    msgpack_pack_str_body(pk, s, len);
}

static void s_key(msgpack_packer *pk, const char *key)
{
    s_str(pk, key);
}

static void s_hex(msgpack_packer *pk, ProtobufCBinaryData id)
{
    static const char digits[] = "0123456789abcdef";
    char text[2 * 64];
    size_t n = id.len > 64 ? 64 : id.len;
    for (size_t i = 0; i < n; i++) {
        text[2 * i] = digits[id.data[i] >> 4];
        text[2 * i + 1] = digits[id.data[i] & 15];
    }
    msgpack_pack_str(pk, 2 * n);
    msgpack_pack_str_body(pk, text, 2 * n);
}

static void s_attributes(msgpack_packer *pk, otlp_kv_t *const *kv, size_t n);

static void s_any(msgpack_packer *pk, const otlp_any_t *v)
{
    switch (v ? v->value_case : OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE__NOT_SET) {
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
        s_str(pk, v->string_value);
        break;
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
        v->bool_value ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
        break;
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
        msgpack_pack_int64(pk, v->int_value);
        break;
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
        msgpack_pack_double(pk, v->double_value);
        break;
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE: {
        size_t n = v->array_value ? v->array_value->n_values : 0;
        msgpack_pack_array(pk, n);
        for (size_t i = 0; i < n; i++) {
            s_any(pk, v->array_value->values[i]);
        }
        break;
    }
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_KVLIST_VALUE:
        s_attributes(pk, v->kvlist_value ? v->kvlist_value->values : NULL, v->kvlist_value ? v->kvlist_value->n_values : 0);
        break;
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BYTES_VALUE:
        msgpack_pack_bin(pk, v->bytes_value.len);
        msgpack_pack_bin_body(pk, v->bytes_value.data, v->bytes_value.len);
        break;
    default:
        msgpack_pack_nil(pk);
    }
}

static void s_attributes(msgpack_packer *pk, otlp_kv_t *const *kv, size_t n)
{
    msgpack_pack_map(pk, n);
    for (size_t i = 0; i < n; i++) {
        s_str(pk, kv[i]->key);
        s_any(pk, kv[i]->value);
    }
}

//  What every record of a resource and scope carries.
typedef struct {
    const otlp_resource_t *resource;
    const char *resource_schema_url;
    const otlp_scope_t *scope;
} context_t;

static void s_context(msgpack_packer *pk, const context_t *c)
{
    s_key(pk, "resource");
    s_attributes(pk, c->resource ? c->resource->attributes : NULL, c->resource ? c->resource->n_attributes : 0);
    s_key(pk, "resource_schema_url");
    s_str(pk, c->resource_schema_url);
    s_key(pk, "scope");
    msgpack_pack_map(pk, 3);
    s_key(pk, "name");
    s_str(pk, c->scope ? c->scope->name : "");
    s_key(pk, "version");
    s_str(pk, c->scope ? c->scope->version : "");
    s_key(pk, "attributes");
    s_attributes(pk, c->scope ? c->scope->attributes : NULL, c->scope ? c->scope->n_attributes : 0);
}

static bool s_context_unique(context_t *c, const char **dup)
{
    return (!c->resource || s_unique(c->resource->attributes, c->resource->n_attributes, dup)) &&
           (!c->scope || s_unique(c->scope->attributes, c->scope->n_attributes, dup));
}

//  The context's three pairs, packed once per resource and scope and
//  copied into each of their records.
typedef struct {
    const char *data;
    size_t size;
} packed_t;

static void s_raw(msgpack_packer *pk, const packed_t *raw)
{
    msgpack_sbuffer_write(pk->data, raw->data, raw->size);
}

static void s_log(msgpack_packer *pk, const otlp_log_t *log, const packed_t *c)
{
    bool event = log->event_name && log->event_name[0];
    msgpack_pack_map(pk, 13 + (event ? 1 : 0));
    s_key(pk, "signal");
    s_str(pk, "log");
    s_key(pk, "time_unix_nano");
    msgpack_pack_uint64(pk, log->time_unix_nano);
    s_key(pk, "observed_time_unix_nano");
    msgpack_pack_uint64(pk, log->observed_time_unix_nano);
    s_key(pk, "severity_number");
    msgpack_pack_int32(pk, log->severity_number);
    s_key(pk, "severity_text");
    s_str(pk, log->severity_text);
    s_key(pk, "body");
    s_any(pk, log->body);
    s_key(pk, "attributes");
    s_attributes(pk, log->attributes, log->n_attributes);
    s_key(pk, "trace_id");
    s_hex(pk, log->trace_id);
    s_key(pk, "span_id");
    s_hex(pk, log->span_id);
    s_key(pk, "flags");
    msgpack_pack_uint32(pk, log->flags);
    if (event) {
        s_key(pk, "event_name");
        s_str(pk, log->event_name);
    }
    s_raw(pk, c);
}

static void s_span(msgpack_packer *pk, const otlp_span_t *span, const packed_t *c)
{
    msgpack_pack_map(pk, 16);
    s_key(pk, "signal");
    s_str(pk, "span");
    s_key(pk, "trace_id");
    s_hex(pk, span->trace_id);
    s_key(pk, "span_id");
    s_hex(pk, span->span_id);
    s_key(pk, "parent_span_id");
    s_hex(pk, span->parent_span_id);
    s_key(pk, "trace_state");
    s_str(pk, span->trace_state);
    s_key(pk, "name");
    s_str(pk, span->name);
    s_key(pk, "kind");
    msgpack_pack_int32(pk, span->kind);
    s_key(pk, "start_time_unix_nano");
    msgpack_pack_uint64(pk, span->start_time_unix_nano);
    s_key(pk, "end_time_unix_nano");
    msgpack_pack_uint64(pk, span->end_time_unix_nano);
    s_key(pk, "attributes");
    s_attributes(pk, span->attributes, span->n_attributes);
    s_key(pk, "events");
    msgpack_pack_array(pk, span->n_events);
    for (size_t i = 0; i < span->n_events; i++) {
        const otlp_event_t *e = span->events[i];
        msgpack_pack_map(pk, 3);
        s_key(pk, "time_unix_nano");
        msgpack_pack_uint64(pk, e->time_unix_nano);
        s_key(pk, "name");
        s_str(pk, e->name);
        s_key(pk, "attributes");
        s_attributes(pk, e->attributes, e->n_attributes);
    }
    s_key(pk, "links");
    msgpack_pack_array(pk, span->n_links);
    for (size_t i = 0; i < span->n_links; i++) {
        const otlp_link_t *l = span->links[i];
        msgpack_pack_map(pk, 3);
        s_key(pk, "trace_id");
        s_hex(pk, l->trace_id);
        s_key(pk, "span_id");
        s_hex(pk, l->span_id);
        s_key(pk, "attributes");
        s_attributes(pk, l->attributes, l->n_attributes);
    }
    s_key(pk, "status");
    msgpack_pack_map(pk, 2);
    s_key(pk, "code");
    msgpack_pack_int32(pk, span->status ? span->status->code : 0);
    s_key(pk, "message");
    s_str(pk, span->status ? span->status->message : "");
    s_raw(pk, c);
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
    msgpack_packer pk;
    msgpack_sbuffer context;  // the current resource and scope, packed
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

static packed_t s_pack_context(walk_t *w, const context_t *c)
{
    msgpack_packer pk;
    w->context.size = 0;
    msgpack_packer_init(&pk, &w->context, msgpack_sbuffer_write);
    s_context(&pk, c);
    return (packed_t){w->context.data, w->context.data ? w->context.size : 0};
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
            packed_t packed = s_pack_context(w, &c);
            if (!packed.size) {
                s_reject(w, sl->n_log_records, "(out of memory) a resource or scope", "");
                continue;
            }
            for (size_t i = 0; i < sl->n_log_records; i++) {
                const otlp_log_t *log = sl->log_records[i];
                if (!s_unique(log->attributes, log->n_attributes, &dup) || !s_any_unique(log->body, &dup)) {
                    s_reject(w, 1, "a log record", dup);
                    continue;
                }
                s_log(&w->pk, log, &packed);
                w->count++;
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
            packed_t packed = s_pack_context(w, &c);
            if (!packed.size) {
                s_reject(w, ss->n_spans, "(out of memory) a resource or scope", "");
                continue;
            }
            for (size_t i = 0; i < ss->n_spans; i++) {
                if (!s_span_unique(ss->spans[i], &dup)) {
                    s_reject(w, 1, "a span", dup);
                    continue;
                }
                s_span(&w->pk, ss->spans[i], &packed);
                w->count++;
            }
        }
    }
}

int drv_otlp_to_records(const drv_otlp_request_t *request, msgpack_sbuffer *out, int64_t *rejected, char *why,
                        size_t whylen)
{
    *rejected = 0;
    if (whylen) {
        why[0] = 0;
    }
    drv_record_batch_begin(out);
    walk_t w = {.rejected = rejected, .why = why, .whylen = whylen};
    msgpack_packer_init(&w.pk, out, msgpack_sbuffer_write);
    msgpack_sbuffer_init(&w.context);
    if (request->signal == DRV_OTLP_LOGS) {
        s_logs(&w, request->logs);
    } else {
        s_traces(&w, request->traces);
    }
    msgpack_sbuffer_destroy(&w.context);
    drv_record_batch_end(out, w.count);
    return (int)w.count;
}

//  ---------------------------------------------------------------- protobuf

//  protobuf-c's allocations come from one arena per request (freed whole
//  by drv_otlp_request_free), and a decode that failed for want of memory is
//  told from one that failed on the bytes.
typedef struct {
    drv_arena_t *arena;
    bool short_of_memory;
} unpack_t;

static void *s_alloc(void *data, size_t size)
{
    unpack_t *u = data;
    void *p = drv_arena_alloc(u->arena, size);
    if (!p) {
        u->short_of_memory = true;
    }
    return p;
}

static void s_free(void *data, void *p)
{
    (void)data;
    (void)p; // the arena gives everything back at once
}

int drv_otlp_unpack(drv_otlp_signal_t signal, const void *data, size_t size, drv_otlp_request_t *out, char *err,
                    size_t errlen)
{
    out->signal = signal;
    out->message = NULL;
    out->arena = NULL;
    const ProtobufCMessageDescriptor *desc =
        signal == DRV_OTLP_LOGS ? &opentelemetry__proto__collector__logs__v1__export_logs_service_request__descriptor
                                : &opentelemetry__proto__collector__trace__v1__export_trace_service_request__descriptor;
    char why[240];
    if (drv_pbcheck(desc, data, size, why, sizeof why) != 0) {
        snprintf(err, errlen, "malformed protobuf: %s", why);
        return -1;
    }
    //  Decoded structs take about twice the bytes (more for mostly-empty
    //  messages: the arena grows).
    unpack_t u = {.arena = drv_arena_new(2 * size + 1024)};
    if (!u.arena) {
        snprintf(err, errlen, "out of memory");
        return DRV_OTLP_NO_MEMORY;
    }
    ProtobufCAllocator allocator = {.alloc = s_alloc, .free = s_free, .allocator_data = &u};
    out->message = protobuf_c_message_unpack(desc, &allocator, size, data);
    if (!out->message) {
        drv_arena_destroy(&u.arena);
        snprintf(err, errlen, u.short_of_memory ? "out of memory" : "malformed protobuf");
        return u.short_of_memory ? DRV_OTLP_NO_MEMORY : -1;
    }
    out->arena = u.arena;
    return 0;
}

void drv_otlp_request_free(drv_otlp_request_t *request)
{
    if (request->arena) {
        drv_arena_destroy(&request->arena); // the whole message with it
    } else if (request->message) {
        protobuf_c_message_free_unpacked(request->message, NULL);
    }
    request->message = NULL;
}
