/*  drv_otlp_records — see drv_otlp_records.h. */
#include "drv_otlp_records_internal.h"
#include "drv_record.h"

#include "drover/drv_mpcheck.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static msgpack_object s_log(drv_otlp_objects_t *b, const otlp_log_t *log, const msgpack_object_kv *context,
                            uint64_t observed_ns)
{
    uint64_t observed = log->observed_time_unix_nano ? log->observed_time_unix_nano : observed_ns; // a sender's kept
    bool event = log->event_name && log->event_name[0];
    size_t n = 10 + (event ? 1 : 0) + (log->dropped_attributes_count ? 1 : 0);
    msgpack_object_kv *p = drv_otlp_obj_take(b, (n + CONTEXT_PAIRS) * sizeof *p);
    if (p) {
        p[0] = (msgpack_object_kv){STR("signal"), STR("log")};
        p[1] = (msgpack_object_kv){STR("time_unix_nano"), drv_otlp_obj_uint(log->time_unix_nano)};
        p[2] = (msgpack_object_kv){STR("observed_time_unix_nano"), drv_otlp_obj_uint(observed)};
        p[3] = (msgpack_object_kv){STR("severity_number"), drv_otlp_obj_int(log->severity_number)};
        p[4] = (msgpack_object_kv){STR("severity_text"), drv_otlp_obj_str(log->severity_text)};
        p[5] = (msgpack_object_kv){STR("body"), drv_otlp_obj_any(b, log->body, 2)};
        p[6] =
            (msgpack_object_kv){STR("attributes"), drv_otlp_obj_attributes(b, log->attributes, log->n_attributes, 2)};
        p[7] = (msgpack_object_kv){STR("trace_id"), drv_otlp_obj_hex(b, log->trace_id)};
        p[8] = (msgpack_object_kv){STR("span_id"), drv_otlp_obj_hex(b, log->span_id)};
        p[9] = (msgpack_object_kv){STR("flags"), drv_otlp_obj_uint(log->flags)};
        size_t at = 10;
        if (event) {
            p[at++] = (msgpack_object_kv){STR("event_name"), drv_otlp_obj_str(log->event_name)};
        }
        if (log->dropped_attributes_count) {
            p[at++] =
                (msgpack_object_kv){STR("dropped_attributes_count"), drv_otlp_obj_uint(log->dropped_attributes_count)};
        }
    }
    return drv_otlp_obj_record(p, n, context);
}

//  A count OTLP keeps only when it is not zero, as the record does.
#define DROPPED(p, n, name, value)                                                                                     \
    do {                                                                                                               \
        if (value) {                                                                                                   \
            (p)[(n)++] = (msgpack_object_kv){STR(name), drv_otlp_obj_uint(value)};                                     \
        }                                                                                                              \
    } while (0)

//  A span's events or links: maps of three pairs, and what else they carry.
static msgpack_object s_event(drv_otlp_objects_t *b, const otlp_event_t *e)
{
    msgpack_object_kv *p = drv_otlp_obj_take(b, 4 * sizeof *p);
    size_t n = 3;
    if (p) {
        p[0] = (msgpack_object_kv){STR("time_unix_nano"), drv_otlp_obj_uint(e->time_unix_nano)};
        p[1] = (msgpack_object_kv){STR("name"), drv_otlp_obj_str(e->name)};
        p[2] = (msgpack_object_kv){STR("attributes"), drv_otlp_obj_attributes(b, e->attributes, e->n_attributes, 4)};
        DROPPED(p, n, "dropped_attributes_count", e->dropped_attributes_count);
    }
    return drv_otlp_obj_map(p, n);
}

static msgpack_object s_link(drv_otlp_objects_t *b, const otlp_link_t *l)
{
    msgpack_object_kv *p = drv_otlp_obj_take(b, 6 * sizeof *p);
    size_t n = 3;
    if (p) {
        p[0] = (msgpack_object_kv){STR("trace_id"), drv_otlp_obj_hex(b, l->trace_id)};
        p[1] = (msgpack_object_kv){STR("span_id"), drv_otlp_obj_hex(b, l->span_id)};
        p[2] = (msgpack_object_kv){STR("attributes"), drv_otlp_obj_attributes(b, l->attributes, l->n_attributes, 4)};
        if (l->trace_state && l->trace_state[0]) {
            p[n++] = (msgpack_object_kv){STR("trace_state"), drv_otlp_obj_str(l->trace_state)};
        }
        DROPPED(p, n, "flags", l->flags);
        DROPPED(p, n, "dropped_attributes_count", l->dropped_attributes_count);
    }
    return drv_otlp_obj_map(p, n);
}

static msgpack_object s_span(drv_otlp_objects_t *b, const otlp_span_t *span, const msgpack_object_kv *context)
{
    msgpack_object_kv *p = drv_otlp_obj_take(b, (17 + CONTEXT_PAIRS) * sizeof *p);
    msgpack_object *events = drv_otlp_obj_take(b, span->n_events * sizeof *events);
    msgpack_object *links = drv_otlp_obj_take(b, span->n_links * sizeof *links);
    msgpack_object_kv *status = drv_otlp_obj_take(b, 2 * sizeof *status);
    if (!p || !status) {
        return (msgpack_object){.type = MSGPACK_OBJECT_NIL}; // out of memory: the whole request is refused
    }
    for (size_t i = 0; events && i < span->n_events; i++) {
        events[i] = s_event(b, span->events[i]);
    }
    for (size_t i = 0; links && i < span->n_links; i++) {
        links[i] = s_link(b, span->links[i]);
    }
    status[0] = (msgpack_object_kv){STR("code"), drv_otlp_obj_int(span->status ? span->status->code : 0)};
    status[1] = (msgpack_object_kv){STR("message"), drv_otlp_obj_str(span->status ? span->status->message : "")};
    p[0] = (msgpack_object_kv){STR("signal"), STR("span")};
    p[1] = (msgpack_object_kv){STR("trace_id"), drv_otlp_obj_hex(b, span->trace_id)};
    p[2] = (msgpack_object_kv){STR("span_id"), drv_otlp_obj_hex(b, span->span_id)};
    p[3] = (msgpack_object_kv){STR("parent_span_id"), drv_otlp_obj_hex(b, span->parent_span_id)};
    p[4] = (msgpack_object_kv){STR("trace_state"), drv_otlp_obj_str(span->trace_state)};
    p[5] = (msgpack_object_kv){STR("name"), drv_otlp_obj_str(span->name)};
    p[6] = (msgpack_object_kv){STR("kind"), drv_otlp_obj_int(span->kind)};
    p[7] = (msgpack_object_kv){STR("start_time_unix_nano"), drv_otlp_obj_uint(span->start_time_unix_nano)};
    p[8] = (msgpack_object_kv){STR("end_time_unix_nano"), drv_otlp_obj_uint(span->end_time_unix_nano)};
    p[9] = (msgpack_object_kv){STR("attributes"), drv_otlp_obj_attributes(b, span->attributes, span->n_attributes, 2)};
    p[10] = (msgpack_object_kv){STR("events"), drv_otlp_obj_array(events, span->n_events)};
    p[11] = (msgpack_object_kv){STR("links"), drv_otlp_obj_array(links, span->n_links)};
    p[12] = (msgpack_object_kv){STR("status"), drv_otlp_obj_map(status, 2)};
    p[13] = (msgpack_object_kv){STR("flags"), drv_otlp_obj_uint(span->flags)};
    size_t n = 14;
    DROPPED(p, n, "dropped_attributes_count", span->dropped_attributes_count);
    DROPPED(p, n, "dropped_events_count", span->dropped_events_count);
    DROPPED(p, n, "dropped_links_count", span->dropped_links_count);
    return drv_otlp_obj_record(p, n, context);
}

static bool s_span_unique(const otlp_span_t *span, const char **dup)
{
    if (!drv_otlp_obj_unique(span->attributes, span->n_attributes, dup)) {
        return false;
    }
    for (size_t i = 0; i < span->n_events; i++) {
        if (!drv_otlp_obj_unique(span->events[i]->attributes, span->events[i]->n_attributes, dup)) {
            return false;
        }
    }
    for (size_t i = 0; i < span->n_links; i++) {
        if (!drv_otlp_obj_unique(span->links[i]->attributes, span->links[i]->n_attributes, dup)) {
            return false;
        }
    }
    return true;
}

//  ---------------------------------------------------------------- requests

size_t drv_otlp_count(const drv_otlp_request_t *r)
{
    size_t count = 0;
    if (r->signal == DRV_OTLP_METRICS) {
        return drv_otlp_metrics_count(r->metrics);
    }
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

static void s_logs(drv_otlp_walk_t *w, const otlp_logs_request_t *req)
{
    for (size_t r = 0; r < req->n_resource_logs; r++) {
        const otlp_resource_logs_t *rl = req->resource_logs[r];
        for (size_t s = 0; s < rl->n_scope_logs; s++) {
            const otlp_scope_logs_t *sl = rl->scope_logs[s];
            drv_otlp_context_t c = {rl->resource, rl->schema_url, sl->scope};
            const char *dup = NULL;
            if (!drv_otlp_obj_context_unique(&c, &dup)) {
                drv_otlp_obj_reject(w, sl->n_log_records, "a resource or scope", dup);
                continue;
            }
            msgpack_object_kv context[CONTEXT_PAIRS];
            drv_otlp_obj_context(&w->b, &c, context);
            for (size_t i = 0; i < sl->n_log_records; i++) {
                const otlp_log_t *log = sl->log_records[i];
                if (!drv_otlp_obj_unique(log->attributes, log->n_attributes, &dup) ||
                    !drv_otlp_obj_any_unique(log->body, &dup)) {
                    drv_otlp_obj_reject(w, 1, "a log record", dup);
                    continue;
                }
                w->records[w->count++] = s_log(&w->b, log, context, w->observed_ns);
            }
        }
    }
}

static void s_traces(drv_otlp_walk_t *w, const otlp_traces_request_t *req)
{
    for (size_t r = 0; r < req->n_resource_spans; r++) {
        const otlp_resource_spans_t *rs = req->resource_spans[r];
        for (size_t s = 0; s < rs->n_scope_spans; s++) {
            const otlp_scope_spans_t *ss = rs->scope_spans[s];
            drv_otlp_context_t c = {rs->resource, rs->schema_url, ss->scope};
            const char *dup = NULL;
            if (!drv_otlp_obj_context_unique(&c, &dup)) {
                drv_otlp_obj_reject(w, ss->n_spans, "a resource or scope", dup);
                continue;
            }
            msgpack_object_kv context[CONTEXT_PAIRS];
            drv_otlp_obj_context(&w->b, &c, context);
            for (size_t i = 0; i < ss->n_spans; i++) {
                if (!s_span_unique(ss->spans[i], &dup)) {
                    drv_otlp_obj_reject(w, 1, "a span", dup);
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
    drv_otlp_walk_t w = {
        .b = {.zone = zone}, .rejected = rejected, .why = why, .whylen = whylen, .observed_ns = request->observed_ns};
    size_t count = drv_otlp_count(request);
    if (count > INT32_MAX) {
        return DRV_OTLP_NO_MEMORY;
    }
    w.records = drv_otlp_obj_take(&w.b, count * sizeof *w.records);
    if (count && !w.records) {
        return DRV_OTLP_NO_MEMORY;
    }
    if (request->signal == DRV_OTLP_LOGS) {
        s_logs(&w, request->logs);
    } else if (request->signal == DRV_OTLP_TRACES) {
        s_traces(&w, request->traces);
    } else {
        drv_otlp_metrics_walk(&w, request->metrics);
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
