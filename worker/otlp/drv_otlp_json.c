/*  drv_otlp_json — see drv_otlp_json.h. Every struct is malloc'd and
    initialised as protobuf-c would, so protobuf_c_message_free_unpacked
    frees a request built here, whole or half-built, like an unpacked one.
    Out of memory is a failure like any other (drv_otlp_json_alloc): what
    was built so far stays consistent (no NULL in a repeated field) and is
    freed, and the request is refused with "retry". */
#include "drv_otlp_json.h"
#include "drv_otlp_json_internal.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 32 // AnyValue nesting (a record decodes no deeper)

//  ---------------------------------------------------------------- values

static otlp_any_t *s_any(ctx_t *c, const json_t *v, const char *field, int depth)
{
    if (!v || json_is_null(v)) {
        return NULL;
    }
    if (!json_is_object(v)) {
        drv_otlp_json_fail(c, field, "must be an AnyValue object");
        return NULL;
    }
    if (depth > MAX_DEPTH) {
        drv_otlp_json_fail(c, field, "nested deeper than %d levels", MAX_DEPTH);
        return NULL;
    }
    otlp_any_t *any = drv_otlp_json_alloc(c, sizeof *any);
    if (!any) {
        return NULL;
    }
    opentelemetry__proto__common__v1__any_value__init(any);
    size_t at = drv_otlp_json_enter(c, field, -1);
    json_t *x;
    if ((x = drv_otlp_json_get(v, "stringValue"))) {
        any->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
        any->string_value = drv_otlp_json_string(c, v, "stringValue");
    } else if ((x = drv_otlp_json_get(v, "boolValue"))) {
        if (!json_is_boolean(x)) {
            drv_otlp_json_fail(c, "boolValue", "must be true or false");
        }
        any->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE;
        any->bool_value = json_is_true(x);
    } else if ((x = drv_otlp_json_get(v, "intValue"))) {
        any->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
        any->int_value = drv_otlp_json_int64(c, x, "intValue");
    } else if ((x = drv_otlp_json_get(v, "doubleValue"))) {
        if (!json_is_number(x)) {
            drv_otlp_json_fail(c, "doubleValue", "must be a number");
        }
        any->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE;
        any->double_value = json_number_value(x);
    } else if ((x = drv_otlp_json_get(v, "bytesValue"))) {
        any->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BYTES_VALUE;
        any->bytes_value = drv_otlp_json_base64(c, x, "bytesValue");
    } else if ((x = drv_otlp_json_get(v, "arrayValue"))) {
        otlp_array_t *array = drv_otlp_json_alloc(c, sizeof *array);
        if (!array) {
            drv_otlp_json_leave(c, at);
            return any;
        }
        opentelemetry__proto__common__v1__array_value__init(array);
        any->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE;
        any->array_value = array;
        json_t *values = drv_otlp_json_get(x, "values");
        if (values && !json_is_array(values)) {
            drv_otlp_json_fail(c, "arrayValue.values", "must be a list");
        } else if (values) {
            array->values = drv_otlp_json_alloc(c, (json_array_size(values) + 1) * sizeof *array->values);
            for (size_t i = 0; array->values && i < json_array_size(values) && !c->failed; i++) {
                size_t in = drv_otlp_json_enter(c, "arrayValue.values", (long)i);
                otlp_any_t *item = s_any(c, json_array_get(values, i), "", depth + 1);
                drv_otlp_json_leave(c, in);
                if (!item && !c->failed) {
                    item = drv_otlp_json_alloc(c, sizeof *item); // null: an empty AnyValue in its place
                    if (item) {
                        opentelemetry__proto__common__v1__any_value__init(item);
                    }
                }
                if (item) {
                    array->values[array->n_values++] = item;
                }
            }
        }
    } else if ((x = drv_otlp_json_get(v, "kvlistValue"))) {
        otlp_kvlist_t *list = drv_otlp_json_alloc(c, sizeof *list);
        if (!list) {
            drv_otlp_json_leave(c, at);
            return any;
        }
        opentelemetry__proto__common__v1__key_value_list__init(list);
        any->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_KVLIST_VALUE;
        any->kvlist_value = list;
        size_t in = drv_otlp_json_enter(c, "kvlistValue", -1);
        list->values = drv_otlp_json_attributes(c, x, "values", &list->n_values, depth + 1);
        drv_otlp_json_leave(c, in);
    }
    drv_otlp_json_leave(c, at);
    return any;
}

otlp_kv_t **drv_otlp_json_attributes(ctx_t *c, const json_t *obj, const char *field, size_t *n, int depth)
{
    *n = 0;
    json_t *list = drv_otlp_json_get(obj, field);
    if (!list || json_is_null(list)) {
        return NULL;
    }
    if (!json_is_array(list)) {
        drv_otlp_json_fail(c, field, "must be a list of {key, value}");
        return NULL;
    }
    otlp_kv_t **kv = drv_otlp_json_alloc(c, (json_array_size(list) + 1) * sizeof *kv);
    for (size_t i = 0; kv && i < json_array_size(list) && !c->failed; i++) {
        json_t *item = json_array_get(list, i);
        otlp_kv_t *one = drv_otlp_json_alloc(c, sizeof *one);
        if (!one) {
            break;
        }
        size_t at = drv_otlp_json_enter(c, field, (long)i);
        opentelemetry__proto__common__v1__key_value__init(one);
        kv[(*n)++] = one;
        if (!json_is_object(item) || !json_is_string(json_object_get(item, "key"))) {
            drv_otlp_json_fail(c, "key", "must be a string");
        } else {
            one->key = drv_otlp_json_string(c, item, "key");
            one->value = s_any(c, json_object_get(item, "value"), "value", depth);
        }
        drv_otlp_json_leave(c, at);
    }
    return kv;
}

void **drv_otlp_json_list(ctx_t *c, const json_t *obj, const char *field, size_t *n, drv_otlp_json_make_fn *make)
{
    *n = 0;
    json_t *list = drv_otlp_json_get(obj, field);
    if (!list || json_is_null(list)) {
        return NULL;
    }
    if (!json_is_array(list)) {
        drv_otlp_json_fail(c, field, "must be a list");
        return NULL;
    }
    void **items = drv_otlp_json_alloc(c, (json_array_size(list) + 1) * sizeof *items);
    for (size_t i = 0; items && i < json_array_size(list) && !c->failed; i++) {
        size_t at = drv_otlp_json_enter(c, field, (long)i);
        json_t *item = json_array_get(list, i);
        if (!json_is_object(item)) {
            drv_otlp_json_fail(c, "", "must be an object");
        } else if ((items[*n] = make(c, item))) {
            (*n)++; // NULL: out of memory, already failed
        }
        drv_otlp_json_leave(c, at);
    }
    return items;
}

otlp_resource_t *drv_otlp_json_resource(ctx_t *c, const json_t *obj)
{
    json_t *v = drv_otlp_json_get(obj, "resource");
    if (!json_is_object(v)) {
        return NULL;
    }
    otlp_resource_t *r = drv_otlp_json_alloc(c, sizeof *r);
    if (!r) {
        return NULL;
    }
    opentelemetry__proto__resource__v1__resource__init(r);
    size_t at = drv_otlp_json_enter(c, "resource", -1);
    r->attributes = drv_otlp_json_attributes(c, v, "attributes", &r->n_attributes, 0);
    r->dropped_attributes_count = (uint32_t)drv_otlp_json_uint(c, v, "droppedAttributesCount", UINT32_MAX);
    drv_otlp_json_leave(c, at);
    return r;
}

otlp_scope_t *drv_otlp_json_scope(ctx_t *c, const json_t *obj)
{
    json_t *v = drv_otlp_json_get(obj, "scope");
    if (!json_is_object(v)) {
        return NULL;
    }
    otlp_scope_t *scope = drv_otlp_json_alloc(c, sizeof *scope);
    if (!scope) {
        return NULL;
    }
    opentelemetry__proto__common__v1__instrumentation_scope__init(scope);
    size_t at = drv_otlp_json_enter(c, "scope", -1);
    scope->name = drv_otlp_json_string(c, v, "name");
    scope->version = drv_otlp_json_string(c, v, "version");
    scope->attributes = drv_otlp_json_attributes(c, v, "attributes", &scope->n_attributes, 0);
    scope->dropped_attributes_count = (uint32_t)drv_otlp_json_uint(c, v, "droppedAttributesCount", UINT32_MAX);
    drv_otlp_json_leave(c, at);
    return scope;
}

//  ---------------------------------------------------------------- logs

static const char *const s_severities[] = {
    "SEVERITY_NUMBER_UNSPECIFIED", "SEVERITY_NUMBER_TRACE", "SEVERITY_NUMBER_TRACE2", "SEVERITY_NUMBER_TRACE3",
    "SEVERITY_NUMBER_TRACE4",      "SEVERITY_NUMBER_DEBUG", "SEVERITY_NUMBER_DEBUG2", "SEVERITY_NUMBER_DEBUG3",
    "SEVERITY_NUMBER_DEBUG4",      "SEVERITY_NUMBER_INFO",  "SEVERITY_NUMBER_INFO2",  "SEVERITY_NUMBER_INFO3",
    "SEVERITY_NUMBER_INFO4",       "SEVERITY_NUMBER_WARN",  "SEVERITY_NUMBER_WARN2",  "SEVERITY_NUMBER_WARN3",
    "SEVERITY_NUMBER_WARN4",       "SEVERITY_NUMBER_ERROR", "SEVERITY_NUMBER_ERROR2", "SEVERITY_NUMBER_ERROR3",
    "SEVERITY_NUMBER_ERROR4",      "SEVERITY_NUMBER_FATAL", "SEVERITY_NUMBER_FATAL2", "SEVERITY_NUMBER_FATAL3",
    "SEVERITY_NUMBER_FATAL4"};

static void *s_log(ctx_t *c, const json_t *v)
{
    otlp_log_t *log = drv_otlp_json_alloc(c, sizeof *log);
    if (!log) {
        return NULL;
    }
    opentelemetry__proto__logs__v1__log_record__init(log);
    log->time_unix_nano = drv_otlp_json_uint(c, v, "timeUnixNano", UINT64_MAX);
    log->observed_time_unix_nano = drv_otlp_json_uint(c, v, "observedTimeUnixNano", UINT64_MAX);
    log->severity_number = drv_otlp_json_enum(c, v, "severityNumber", s_severities, 25);
    log->severity_text = drv_otlp_json_string(c, v, "severityText");
    log->body = s_any(c, drv_otlp_json_get(v, "body"), "body", 0);
    log->attributes = drv_otlp_json_attributes(c, v, "attributes", &log->n_attributes, 0);
    log->dropped_attributes_count = (uint32_t)drv_otlp_json_uint(c, v, "droppedAttributesCount", UINT32_MAX);
    log->flags = (uint32_t)drv_otlp_json_uint(c, v, "flags", UINT32_MAX);
    log->trace_id = drv_otlp_json_hex_id(c, v, "traceId");
    log->span_id = drv_otlp_json_hex_id(c, v, "spanId");
    log->event_name = drv_otlp_json_string(c, v, "eventName");
    return log;
}

static void *s_scope_logs(ctx_t *c, const json_t *v)
{
    otlp_scope_logs_t *sl = drv_otlp_json_alloc(c, sizeof *sl);
    if (!sl) {
        return NULL;
    }
    opentelemetry__proto__logs__v1__scope_logs__init(sl);
    sl->scope = drv_otlp_json_scope(c, v);
    sl->log_records = (otlp_log_t **)drv_otlp_json_list(c, v, "logRecords", &sl->n_log_records, s_log);
    sl->schema_url = drv_otlp_json_string(c, v, "schemaUrl");
    return sl;
}

static void *s_resource_logs(ctx_t *c, const json_t *v)
{
    otlp_resource_logs_t *rl = drv_otlp_json_alloc(c, sizeof *rl);
    if (!rl) {
        return NULL;
    }
    opentelemetry__proto__logs__v1__resource_logs__init(rl);
    rl->resource = drv_otlp_json_resource(c, v);
    rl->scope_logs = (otlp_scope_logs_t **)drv_otlp_json_list(c, v, "scopeLogs", &rl->n_scope_logs, s_scope_logs);
    rl->schema_url = drv_otlp_json_string(c, v, "schemaUrl");
    return rl;
}

//  ---------------------------------------------------------------- traces

static const char *const s_kinds[] = {"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER",
                                      "SPAN_KIND_CLIENT",      "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"};
static const char *const s_codes[] = {"STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"};

static void *s_event(ctx_t *c, const json_t *v)
{
    otlp_event_t *e = drv_otlp_json_alloc(c, sizeof *e);
    if (!e) {
        return NULL;
    }
    opentelemetry__proto__trace__v1__span__event__init(e);
    e->time_unix_nano = drv_otlp_json_uint(c, v, "timeUnixNano", UINT64_MAX);
    e->name = drv_otlp_json_string(c, v, "name");
    e->attributes = drv_otlp_json_attributes(c, v, "attributes", &e->n_attributes, 0);
    e->dropped_attributes_count = (uint32_t)drv_otlp_json_uint(c, v, "droppedAttributesCount", UINT32_MAX);
    return e;
}

static void *s_link(ctx_t *c, const json_t *v)
{
    otlp_link_t *l = drv_otlp_json_alloc(c, sizeof *l);
    if (!l) {
        return NULL;
    }
    opentelemetry__proto__trace__v1__span__link__init(l);
    l->trace_id = drv_otlp_json_hex_id(c, v, "traceId");
    l->span_id = drv_otlp_json_hex_id(c, v, "spanId");
    l->trace_state = drv_otlp_json_string(c, v, "traceState");
    l->attributes = drv_otlp_json_attributes(c, v, "attributes", &l->n_attributes, 0);
    l->dropped_attributes_count = (uint32_t)drv_otlp_json_uint(c, v, "droppedAttributesCount", UINT32_MAX);
    l->flags = (uint32_t)drv_otlp_json_uint(c, v, "flags", UINT32_MAX);
    return l;
}

static void *s_span(ctx_t *c, const json_t *v)
{
    otlp_span_t *span = drv_otlp_json_alloc(c, sizeof *span);
    if (!span) {
        return NULL;
    }
    opentelemetry__proto__trace__v1__span__init(span);
    span->trace_id = drv_otlp_json_hex_id(c, v, "traceId");
    span->span_id = drv_otlp_json_hex_id(c, v, "spanId");
    span->trace_state = drv_otlp_json_string(c, v, "traceState");
    span->parent_span_id = drv_otlp_json_hex_id(c, v, "parentSpanId");
    span->flags = (uint32_t)drv_otlp_json_uint(c, v, "flags", UINT32_MAX);
    span->name = drv_otlp_json_string(c, v, "name");
    span->kind = drv_otlp_json_enum(c, v, "kind", s_kinds, 6);
    span->start_time_unix_nano = drv_otlp_json_uint(c, v, "startTimeUnixNano", UINT64_MAX);
    span->end_time_unix_nano = drv_otlp_json_uint(c, v, "endTimeUnixNano", UINT64_MAX);
    span->attributes = drv_otlp_json_attributes(c, v, "attributes", &span->n_attributes, 0);
    span->dropped_attributes_count = (uint32_t)drv_otlp_json_uint(c, v, "droppedAttributesCount", UINT32_MAX);
    span->events = (otlp_event_t **)drv_otlp_json_list(c, v, "events", &span->n_events, s_event);
    span->dropped_events_count = (uint32_t)drv_otlp_json_uint(c, v, "droppedEventsCount", UINT32_MAX);
    span->links = (otlp_link_t **)drv_otlp_json_list(c, v, "links", &span->n_links, s_link);
    span->dropped_links_count = (uint32_t)drv_otlp_json_uint(c, v, "droppedLinksCount", UINT32_MAX);
    json_t *status = drv_otlp_json_get(v, "status");
    if (json_is_object(status)) {
        span->status = drv_otlp_json_alloc(c, sizeof *span->status);
        if (!span->status) {
            return span;
        }
        opentelemetry__proto__trace__v1__status__init(span->status);
        size_t at = drv_otlp_json_enter(c, "status", -1);
        span->status->message = drv_otlp_json_string(c, status, "message");
        span->status->code = drv_otlp_json_enum(c, status, "code", s_codes, 3);
        drv_otlp_json_leave(c, at);
    }
    return span;
}

static void *s_scope_spans(ctx_t *c, const json_t *v)
{
    otlp_scope_spans_t *ss = drv_otlp_json_alloc(c, sizeof *ss);
    if (!ss) {
        return NULL;
    }
    opentelemetry__proto__trace__v1__scope_spans__init(ss);
    ss->scope = drv_otlp_json_scope(c, v);
    ss->spans = (otlp_span_t **)drv_otlp_json_list(c, v, "spans", &ss->n_spans, s_span);
    ss->schema_url = drv_otlp_json_string(c, v, "schemaUrl");
    return ss;
}

static void *s_resource_spans(ctx_t *c, const json_t *v)
{
    otlp_resource_spans_t *rs = drv_otlp_json_alloc(c, sizeof *rs);
    if (!rs) {
        return NULL;
    }
    opentelemetry__proto__trace__v1__resource_spans__init(rs);
    rs->resource = drv_otlp_json_resource(c, v);
    rs->scope_spans = (otlp_scope_spans_t **)drv_otlp_json_list(c, v, "scopeSpans", &rs->n_scope_spans, s_scope_spans);
    rs->schema_url = drv_otlp_json_string(c, v, "schemaUrl");
    return rs;
}

//  ---------------------------------------------------------------- requests

int drv_otlp_json_parse(drv_otlp_signal_t signal, const char *text, size_t size, drv_otlp_request_t *out, char *err,
                        size_t errlen)
{
    out->signal = signal;
    out->message = NULL;
    out->zone = NULL;
    out->observed_ns = 0; // the receiver says when it took it
    json_error_t jerr;
    json_t *doc = json_loadb(text, size, 0, &jerr);
    if (!json_is_object(doc)) {
        if (doc) {
            snprintf(err, errlen, "the body must be a JSON object");
        } else {
            snprintf(err, errlen, "not JSON: %s at line %d column %d", jerr.text, jerr.line, jerr.column);
        }
        json_decref(doc);
        return -1;
    }
    ctx_t c = {.err = err, .errlen = errlen};
    if (signal == DRV_OTLP_LOGS) {
        otlp_logs_request_t *req = drv_otlp_json_alloc(&c, sizeof *req);
        if (!req) {
            json_decref(doc);
            return DRV_OTLP_NO_MEMORY;
        }
        opentelemetry__proto__collector__logs__v1__export_logs_service_request__init(req);
        out->logs = req;
        req->resource_logs = (otlp_resource_logs_t **)drv_otlp_json_list(&c, doc, "resourceLogs", &req->n_resource_logs,
                                                                         s_resource_logs);
    } else if (signal == DRV_OTLP_METRICS) {
        if (drv_otlp_json_metrics(&c, doc, out) != 0) {
            json_decref(doc);
            return DRV_OTLP_NO_MEMORY;
        }
    } else {
        otlp_traces_request_t *req = drv_otlp_json_alloc(&c, sizeof *req);
        if (!req) {
            json_decref(doc);
            return DRV_OTLP_NO_MEMORY;
        }
        opentelemetry__proto__collector__trace__v1__export_trace_service_request__init(req);
        out->traces = req;
        req->resource_spans = (otlp_resource_spans_t **)drv_otlp_json_list(&c, doc, "resourceSpans",
                                                                           &req->n_resource_spans, s_resource_spans);
    }
    json_decref(doc);
    if (c.failed) {
        drv_otlp_request_free(out);
        return c.out_of_memory ? DRV_OTLP_NO_MEMORY : -1;
    }
    return 0;
}
