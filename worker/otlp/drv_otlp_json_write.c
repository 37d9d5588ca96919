/*  drv_otlp_json_write — an export request as OTLP/JSON, as the OTLP/HTTP
    specification encodes it: lowerCamelCase names, trace and span ids as
    hex, 64-bit integers as decimal strings, enums as integers, bytes as
    base64; empty and zero fields left out. */
#include "drv_otlp_json.h"
#include "drv_otlp_json_internal.h"

#include <czmq.h>
#include <jansson.h>
#include <string.h>

void drv_otlp_jw_set(json_t *object, const char *key, json_t *value)
{
    json_object_set_new(object, key, value);
}

void drv_otlp_jw_string(json_t *object, const char *key, const char *value)
{
    if (value && value[0]) {
        drv_otlp_jw_set(object, key, json_string(value));
    }
}

void drv_otlp_jw_u64(json_t *object, const char *key, uint64_t value)
{
    if (value) {
        char text[24];
        snprintf(text, sizeof text, "%llu", (unsigned long long)value);
        drv_otlp_jw_set(object, key, json_string(text));
    }
}

void drv_otlp_jw_int(json_t *object, const char *key, int64_t value)
{
    if (value) {
        drv_otlp_jw_set(object, key, json_integer(value));
    }
}

void drv_otlp_jw_id(json_t *object, const char *key, ProtobufCBinaryData id)
{
    static const char digits[] = "0123456789abcdef";
    if (id.len == 0) {
        return;
    }
    char text[2 * 64 + 1];
    size_t n = id.len > 64 ? 64 : id.len;
    for (size_t i = 0; i < n; i++) {
        text[2 * i] = digits[id.data[i] >> 4];
        text[2 * i + 1] = digits[id.data[i] & 15];
    }
    text[2 * n] = 0;
    drv_otlp_jw_set(object, key, json_string(text));
}

static json_t *s_attributes(otlp_kv_t *const *kv, size_t n);

static json_t *s_any(const otlp_any_t *v)
{
    json_t *out = json_object();
    switch (v ? v->value_case : OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE__NOT_SET) {
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
        drv_otlp_jw_set(out, "stringValue", json_string(v->string_value));
        break;
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
        drv_otlp_jw_set(out, "boolValue", json_boolean(v->bool_value));
        break;
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE: {
        char text[24];
        snprintf(text, sizeof text, "%lld", (long long)v->int_value);
        drv_otlp_jw_set(out, "intValue", json_string(text));
        break;
    }
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
        drv_otlp_jw_set(out, "doubleValue", json_real(v->double_value));
        break;
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE: {
        json_t *values = json_array();
        for (size_t i = 0; v->array_value && i < v->array_value->n_values; i++) {
            json_array_append_new(values, s_any(v->array_value->values[i]));
        }
        drv_otlp_jw_set(out, "arrayValue", json_pack("{s:o}", "values", values));
        break;
    }
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_KVLIST_VALUE:
        drv_otlp_jw_set(out, "kvlistValue",
                        json_pack("{s:o}", "values",
                                  s_attributes(v->kvlist_value ? v->kvlist_value->values : NULL,
                                               v->kvlist_value ? v->kvlist_value->n_values : 0)));
        break;
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BYTES_VALUE: {
        zarmour_t *armour = zarmour_new();
        zarmour_set_mode(armour, ZARMOUR_MODE_BASE64_STD);
        zarmour_set_line_breaks(armour, false);
        char *encoded = zarmour_encode(armour, v->bytes_value.data, v->bytes_value.len);
        zarmour_destroy(&armour);
        drv_otlp_jw_set(out, "bytesValue", json_string(encoded ? encoded : ""));
        zstr_free(&encoded);
        break;
    }
    default:
        break;
    }
    return out;
}

static json_t *s_attributes(otlp_kv_t *const *kv, size_t n)
{
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(list, json_pack("{s:s, s:o}", "key", kv[i]->key, "value", s_any(kv[i]->value)));
    }
    return list;
}

void drv_otlp_jw_attributes_of(json_t *object, otlp_kv_t *const *kv, size_t n)
{
    if (n) {
        drv_otlp_jw_set(object, "attributes", s_attributes(kv, n));
    }
}

json_t *drv_otlp_jw_resource(const otlp_resource_t *resource, const char *schema_url)
{
    json_t *out = json_object();
    json_t *r = json_object();
    if (resource) {
        drv_otlp_jw_attributes_of(r, resource->attributes, resource->n_attributes);
    }
    drv_otlp_jw_set(out, "resource", r);
    drv_otlp_jw_string(out, "schemaUrl", schema_url);
    return out;
}

json_t *drv_otlp_jw_scope(const otlp_scope_t *scope)
{
    json_t *out = json_object();
    if (scope) {
        drv_otlp_jw_string(out, "name", scope->name);
        drv_otlp_jw_string(out, "version", scope->version);
        drv_otlp_jw_attributes_of(out, scope->attributes, scope->n_attributes);
    }
    return json_pack("{s:o}", "scope", out);
}

static json_t *s_log(const otlp_log_t *log)
{
    json_t *out = json_object();
    drv_otlp_jw_u64(out, "timeUnixNano", log->time_unix_nano);
    drv_otlp_jw_u64(out, "observedTimeUnixNano", log->observed_time_unix_nano);
    drv_otlp_jw_int(out, "severityNumber", log->severity_number);
    drv_otlp_jw_string(out, "severityText", log->severity_text);
    if (log->body) {
        drv_otlp_jw_set(out, "body", s_any(log->body));
    }
    drv_otlp_jw_attributes_of(out, log->attributes, log->n_attributes);
    drv_otlp_jw_int(out, "flags", log->flags);
    drv_otlp_jw_int(out, "droppedAttributesCount", log->dropped_attributes_count);
    drv_otlp_jw_id(out, "traceId", log->trace_id);
    drv_otlp_jw_id(out, "spanId", log->span_id);
    drv_otlp_jw_string(out, "eventName", log->event_name);
    return out;
}

static json_t *s_span(const otlp_span_t *span)
{
    json_t *out = json_object();
    drv_otlp_jw_id(out, "traceId", span->trace_id);
    drv_otlp_jw_id(out, "spanId", span->span_id);
    drv_otlp_jw_string(out, "traceState", span->trace_state);
    drv_otlp_jw_id(out, "parentSpanId", span->parent_span_id);
    drv_otlp_jw_string(out, "name", span->name);
    drv_otlp_jw_int(out, "kind", span->kind);
    drv_otlp_jw_u64(out, "startTimeUnixNano", span->start_time_unix_nano);
    drv_otlp_jw_u64(out, "endTimeUnixNano", span->end_time_unix_nano);
    drv_otlp_jw_attributes_of(out, span->attributes, span->n_attributes);
    drv_otlp_jw_int(out, "flags", span->flags);
    drv_otlp_jw_int(out, "droppedAttributesCount", span->dropped_attributes_count);
    drv_otlp_jw_int(out, "droppedEventsCount", span->dropped_events_count);
    drv_otlp_jw_int(out, "droppedLinksCount", span->dropped_links_count);
    json_t *events = json_array();
    for (size_t i = 0; i < span->n_events; i++) {
        json_t *event = json_object();
        drv_otlp_jw_u64(event, "timeUnixNano", span->events[i]->time_unix_nano);
        drv_otlp_jw_string(event, "name", span->events[i]->name);
        drv_otlp_jw_attributes_of(event, span->events[i]->attributes, span->events[i]->n_attributes);
        drv_otlp_jw_int(event, "droppedAttributesCount", span->events[i]->dropped_attributes_count);
        json_array_append_new(events, event);
    }
    drv_otlp_jw_set(out, "events", events);
    json_t *links = json_array();
    for (size_t i = 0; i < span->n_links; i++) {
        json_t *link = json_object();
        drv_otlp_jw_id(link, "traceId", span->links[i]->trace_id);
        drv_otlp_jw_id(link, "spanId", span->links[i]->span_id);
        drv_otlp_jw_string(link, "traceState", span->links[i]->trace_state);
        drv_otlp_jw_attributes_of(link, span->links[i]->attributes, span->links[i]->n_attributes);
        drv_otlp_jw_int(link, "flags", span->links[i]->flags);
        drv_otlp_jw_int(link, "droppedAttributesCount", span->links[i]->dropped_attributes_count);
        json_array_append_new(links, link);
    }
    drv_otlp_jw_set(out, "links", links);
    if (span->status) {
        json_t *status = json_object();
        drv_otlp_jw_string(status, "message", span->status->message);
        drv_otlp_jw_int(status, "code", span->status->code);
        drv_otlp_jw_set(out, "status", status);
    }
    return out;
}

int drv_otlp_json_write(const drv_otlp_request_t *request, drv_buf_t *out)
{
    json_t *resources = json_array();
    if (request->signal == DRV_OTLP_LOGS) {
        for (size_t r = 0; r < request->logs->n_resource_logs; r++) {
            const otlp_resource_logs_t *rl = request->logs->resource_logs[r];
            json_t *resource = drv_otlp_jw_resource(rl->resource, rl->schema_url), *scopes = json_array();
            for (size_t s = 0; s < rl->n_scope_logs; s++) {
                json_t *scope = drv_otlp_jw_scope(rl->scope_logs[s]->scope), *records = json_array();
                for (size_t i = 0; i < rl->scope_logs[s]->n_log_records; i++) {
                    json_array_append_new(records, s_log(rl->scope_logs[s]->log_records[i]));
                }
                drv_otlp_jw_set(scope, "logRecords", records);
                json_array_append_new(scopes, scope);
            }
            drv_otlp_jw_set(resource, "scopeLogs", scopes);
            json_array_append_new(resources, resource);
        }
    } else if (request->signal == DRV_OTLP_METRICS) {
        drv_otlp_jw_metrics(request->metrics, resources);
    } else {
        for (size_t r = 0; r < request->traces->n_resource_spans; r++) {
            const otlp_resource_spans_t *rs = request->traces->resource_spans[r];
            json_t *resource = drv_otlp_jw_resource(rs->resource, rs->schema_url), *scopes = json_array();
            for (size_t s = 0; s < rs->n_scope_spans; s++) {
                json_t *scope = drv_otlp_jw_scope(rs->scope_spans[s]->scope), *spans = json_array();
                for (size_t i = 0; i < rs->scope_spans[s]->n_spans; i++) {
                    json_array_append_new(spans, s_span(rs->scope_spans[s]->spans[i]));
                }
                drv_otlp_jw_set(scope, "spans", spans);
                json_array_append_new(scopes, scope);
            }
            drv_otlp_jw_set(resource, "scopeSpans", scopes);
            json_array_append_new(resources, resource);
        }
    }
    json_t *doc = json_pack("{s:o}",
                            request->signal == DRV_OTLP_LOGS     ? "resourceLogs"
                            : request->signal == DRV_OTLP_TRACES ? "resourceSpans"
                                                                 : "resourceMetrics",
                            resources);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    int rc = text ? drv_buf_append(out, text, strlen(text)) : -1;
    free(text);
    return rc;
}
