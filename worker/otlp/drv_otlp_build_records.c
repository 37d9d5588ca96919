/*  drv_otlp_build_records — one record as a LogRecord or Span, and msgpack
    values as AnyValues, for drv_otlp_build (which groups them). */
#include "drv_otlp_build_internal.h"

#include "drover/drv_utf8.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

//  ---------------------------------------------------------------- values

void *drv_otlp_new(build_t *b, const ProtobufCMessageDescriptor *descriptor)
{
    void *message = msgpack_zone_malloc(b->zone, descriptor->sizeof_message);
    if (message) {
        protobuf_c_message_init(descriptor, message);
    }
    return message;
}

void *drv_otlp_array(build_t *b, size_t n)
{
    return msgpack_zone_malloc(b->zone, (n ? n : 1) * sizeof(void *));
}

static char *s_text(build_t *b, const char *data, size_t len)
{
    char *text = msgpack_zone_malloc(b->zone, len + 1);
    if (text) {
        memcpy(text, data, len);
        text[len] = 0;
    }
    return text;
}

static bool s_is_n(const msgpack_object *o, const char *key, size_t len)
{
    return o->type == MSGPACK_OBJECT_STR && o->via.str.size == len && !memcmp(o->via.str.ptr, key, len);
}

#define s_is(o, literal) s_is_n((o), (literal), sizeof(literal) - 1) // a key is a literal: its length is known

const msgpack_object *drv_otlp_get_n(const msgpack_object *map, const char *key, size_t len)
{
    if (!map || map->type != MSGPACK_OBJECT_MAP) {
        return NULL;
    }
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == len && !memcmp(k->via.str.ptr, key, len)) {
            return &map->via.map.ptr[i].val;
        }
    }
    return NULL;
}

//  A string usable as a protobuf string: UTF-8 without NUL.
static bool s_string(const msgpack_object *o)
{
    return o && o->type == MSGPACK_OBJECT_STR && drv_utf8_valid(o->via.str.ptr, o->via.str.size, false);
}

char *drv_otlp_string_of(build_t *b, const msgpack_object *o)
{
    return s_string(o) ? s_text(b, o->via.str.ptr, o->via.str.size) : (char *)"";
}

static bool s_uint(const msgpack_object *o)
{
    return o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER;
}

//  A hex digit's value, or -1.
static int s_nibble(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

//  Lowercase or uppercase hex of an even length: an id.
static bool s_hex(const msgpack_object *o)
{
    if (!o || o->type != MSGPACK_OBJECT_STR || o->via.str.size % 2 || o->via.str.size > 128) {
        return false;
    }
    for (uint32_t i = 0; i < o->via.str.size; i++) {
        if (s_nibble(o->via.str.ptr[i]) < 0) {
            return false;
        }
    }
    return true;
}

ProtobufCBinaryData drv_otlp_id(build_t *b, const msgpack_object *o)
{
    ProtobufCBinaryData id = {0, NULL};
    if (!s_hex(o) || o->via.str.size == 0) {
        return id;
    }
    id.len = o->via.str.size / 2;
    id.data = msgpack_zone_malloc(b->zone, id.len);
    for (size_t i = 0; id.data && i < id.len; i++) {
        id.data[i] = (uint8_t)(s_nibble(o->via.str.ptr[2 * i]) << 4 | s_nibble(o->via.str.ptr[2 * i + 1]));
    }
    return id;
}

static otlp_kv_t *s_kv(build_t *b, const msgpack_object *key, const msgpack_object *value);

static otlp_any_t *s_any(build_t *b, const msgpack_object *o)
{
    otlp_any_t *v = drv_otlp_new(b, &opentelemetry__proto__common__v1__any_value__descriptor);
    if (!v) {
        return NULL;
    }
    switch (o->type) {
    case MSGPACK_OBJECT_BOOLEAN:
        v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE;
        v->bool_value = o->via.boolean;
        break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        if (o->via.u64 > INT64_MAX) {
            v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE;
            v->double_value = (double)o->via.u64;
            break;
        }
        // fall through
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
        v->int_value = o->via.i64;
        break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE;
        v->double_value = o->via.f64;
        break;
    case MSGPACK_OBJECT_STR:
        if (s_string(o)) {
            v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
            v->string_value = s_text(b, o->via.str.ptr, o->via.str.size);
            break;
        }
        //  not text protobuf takes: bytes
        // fall through
    case MSGPACK_OBJECT_BIN:
    case MSGPACK_OBJECT_EXT:
        v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BYTES_VALUE;
        v->bytes_value.len = o->type == MSGPACK_OBJECT_EXT ? o->via.ext.size : o->via.bin.size;
        v->bytes_value.data =
            (uint8_t *)s_text(b, o->type == MSGPACK_OBJECT_EXT ? o->via.ext.ptr : o->via.bin.ptr, v->bytes_value.len);
        break;
    case MSGPACK_OBJECT_ARRAY: {
        otlp_array_t *array = drv_otlp_new(b, &opentelemetry__proto__common__v1__array_value__descriptor);
        if (!array || !(array->values = drv_otlp_array(b, o->via.array.size))) {
            return NULL;
        }
        for (uint32_t i = 0; i < o->via.array.size; i++) {
            if (!(array->values[array->n_values++] = s_any(b, &o->via.array.ptr[i]))) {
                return NULL;
            }
        }
        v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE;
        v->array_value = array;
        break;
    }
    case MSGPACK_OBJECT_MAP: {
        otlp_kvlist_t *list = drv_otlp_new(b, &opentelemetry__proto__common__v1__key_value_list__descriptor);
        if (!list || !(list->values = drv_otlp_array(b, o->via.map.size))) {
            return NULL;
        }
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            if (!(list->values[list->n_values++] = s_kv(b, &o->via.map.ptr[i].key, &o->via.map.ptr[i].val))) {
                return NULL;
            }
        }
        v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_KVLIST_VALUE;
        v->kvlist_value = list;
        break;
    }
    default:
        break; // nil: an AnyValue with nothing set
    }
    return v;
}

static otlp_kv_t *s_kv(build_t *b, const msgpack_object *key, const msgpack_object *value)
{
    otlp_kv_t *kv = drv_otlp_new(b, &opentelemetry__proto__common__v1__key_value__descriptor);
    if (!kv || !(kv->value = s_any(b, value))) {
        return NULL;
    }
    if (s_string(key)) {
        kv->key = s_text(b, key->via.str.ptr, key->via.str.size);
    } else {
        //  A key that is not text (records from msgpack producers may have
        //  them): its JSON-ish spelling.
        char text[32] = "";
        if (key->type == MSGPACK_OBJECT_POSITIVE_INTEGER || key->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
            snprintf(text, sizeof text, key->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? "%llu" : "%lld",
                     key->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? (unsigned long long)key->via.u64
                                                                  : (unsigned long long)key->via.i64);
        }
        kv->key = s_text(b, text, strlen(text));
    }
    return kv->key ? kv : NULL;
}

int drv_otlp_attributes(build_t *b, const msgpack_object *map, const msgpack_object_kv *const *extras, size_t n,
                        otlp_kv_t ***out, size_t *count)
{
    size_t own = map && map->type == MSGPACK_OBJECT_MAP ? map->via.map.size : 0;
    *count = 0;
    if (!(*out = drv_otlp_array(b, own + n))) {
        return -1;
    }
    for (size_t i = 0; i < own; i++) {
        if (!((*out)[(*count)++] = s_kv(b, &map->via.map.ptr[i].key, &map->via.map.ptr[i].val))) {
            return -1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (own && extras[i]->key.type == MSGPACK_OBJECT_STR) {
            if (drv_otlp_get_n(map, extras[i]->key.via.str.ptr, extras[i]->key.via.str.size)) {
                continue; // the record's own attribute wins
            }
        }
        if (!((*out)[(*count)++] = s_kv(b, &extras[i]->key, &extras[i]->val))) {
            return -1;
        }
    }
    return 0;
}

//  ---------------------------------------------------------------- records

//  The keys of record that the mapping does not take (with `taken`
//  deciding), into extras; returns how many.
typedef bool(taken_fn)(const msgpack_object_kv *kv);

static size_t s_extras(const msgpack_object *record, taken_fn *taken, const msgpack_object_kv **extras)
{
    size_t n = 0;
    for (uint32_t i = 0; i < record->via.map.size; i++) {
        if (!taken(&record->via.map.ptr[i])) {
            extras[n++] = &record->via.map.ptr[i];
        }
    }
    return n;
}

static bool s_common_taken(const msgpack_object_kv *kv)
{
    const msgpack_object *v = &kv->val;
    return (s_is(&kv->key, "signal") && s_string(v)) || s_is(&kv->key, "resource") ||
           s_is(&kv->key, "resource_schema_url") || s_is(&kv->key, "scope") ||
           (s_is(&kv->key, "attributes") && v->type == MSGPACK_OBJECT_MAP) ||
           ((s_is(&kv->key, "trace_id") || s_is(&kv->key, "span_id")) && s_hex(v));
}

static bool s_log_taken(const msgpack_object_kv *kv)
{
    const msgpack_object *v = &kv->val;
    return s_common_taken(kv) || s_is(&kv->key, "body") ||
           ((s_is(&kv->key, "time_unix_nano") || s_is(&kv->key, "observed_time_unix_nano")) && s_uint(v)) ||
           ((s_is(&kv->key, "severity_number") || s_is(&kv->key, "flags") ||
             s_is(&kv->key, "dropped_attributes_count")) &&
            s_uint(v) && v->via.u64 <= UINT32_MAX) ||
           ((s_is(&kv->key, "severity_text") || s_is(&kv->key, "event_name")) && s_string(v));
}

//  A record without a signal: its message is the body when it has no body.
static bool s_plain_taken(const msgpack_object_kv *kv)
{
    return s_log_taken(kv) && !s_is(&kv->key, "signal");
}

static bool s_span_taken(const msgpack_object_kv *kv)
{
    const msgpack_object *v = &kv->val;
    return s_common_taken(kv) || (s_is(&kv->key, "parent_span_id") && s_hex(v)) ||
           ((s_is(&kv->key, "trace_state") || s_is(&kv->key, "name")) && s_string(v)) ||
           (s_is(&kv->key, "kind") && s_uint(v) && v->via.u64 <= 5) ||
           ((s_is(&kv->key, "flags") || s_is(&kv->key, "dropped_attributes_count") ||
             s_is(&kv->key, "dropped_events_count") || s_is(&kv->key, "dropped_links_count")) &&
            s_uint(v) && v->via.u64 <= UINT32_MAX) ||
           ((s_is(&kv->key, "start_time_unix_nano") || s_is(&kv->key, "end_time_unix_nano")) && s_uint(v)) ||
           (s_is(&kv->key, "events") && v->type == MSGPACK_OBJECT_ARRAY) ||
           (s_is(&kv->key, "links") && v->type == MSGPACK_OBJECT_ARRAY) ||
           (s_is(&kv->key, "status") && v->type == MSGPACK_OBJECT_MAP);
}

static uint64_t s_u64(const msgpack_object *o)
{
    return s_uint(o) ? o->via.u64 : 0;
}

static uint32_t s_u32(const msgpack_object *o)
{
    return s_uint(o) && o->via.u64 <= UINT32_MAX ? (uint32_t)o->via.u64 : 0;
}

otlp_log_t *drv_otlp_build_log(build_t *b, const msgpack_object *record, const msgpack_object_kv **extras)
{
    otlp_log_t *log = drv_otlp_new(b, &opentelemetry__proto__logs__v1__log_record__descriptor);
    if (!log) {
        return NULL;
    }
    bool plain = !s_string(drv_otlp_get(record, "signal"));
    const msgpack_object *body = drv_otlp_get(record, "body");
    size_t n = s_extras(record, plain ? s_plain_taken : s_log_taken, extras);
    if (plain && !body) {
        body = drv_otlp_get(record, "message");
        size_t kept = 0;
        for (size_t i = 0; i < n; i++) {
            if (!s_is(&extras[i]->key, "message")) {
                extras[kept++] = extras[i];
            }
        }
        n = kept;
    }
    log->time_unix_nano = s_u64(drv_otlp_get(record, "time_unix_nano"));
    log->observed_time_unix_nano = s_u64(drv_otlp_get(record, "observed_time_unix_nano"));
    const msgpack_object *number = drv_otlp_get(record, "severity_number");
    log->severity_number = s_uint(number) && number->via.u64 <= UINT32_MAX ? (int)number->via.u64 : 0;
    log->severity_text = drv_otlp_string_of(b, drv_otlp_get(record, "severity_text"));
    log->event_name = drv_otlp_string_of(b, drv_otlp_get(record, "event_name"));
    if (plain) {
        drv_otlp_syslog_fill(b, record, log);
    }
    if (body && !(log->body = s_any(b, body))) {
        return NULL;
    }
    log->trace_id = drv_otlp_id(b, drv_otlp_get(record, "trace_id"));
    log->span_id = drv_otlp_id(b, drv_otlp_get(record, "span_id"));
    log->flags = (uint32_t)s_u64(drv_otlp_get(record, "flags"));
    log->dropped_attributes_count = s_u32(drv_otlp_get(record, "dropped_attributes_count"));
    return drv_otlp_attributes(b, drv_otlp_get(record, "attributes"), extras, n, &log->attributes, &log->n_attributes)
               ? NULL
               : log;
}

static int s_events(build_t *b, const msgpack_object *list, otlp_span_t *span)
{
    uint32_t n = list && list->type == MSGPACK_OBJECT_ARRAY ? list->via.array.size : 0;
    if (!(span->events = drv_otlp_array(b, n))) {
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        const msgpack_object *e = &list->via.array.ptr[i];
        otlp_event_t *event = drv_otlp_new(b, &opentelemetry__proto__trace__v1__span__event__descriptor);
        if (!event) {
            return -1;
        }
        event->time_unix_nano = s_u64(drv_otlp_get(e, "time_unix_nano"));
        event->name = drv_otlp_string_of(b, drv_otlp_get(e, "name"));
        event->dropped_attributes_count = s_u32(drv_otlp_get(e, "dropped_attributes_count"));
        if (drv_otlp_attributes(b, drv_otlp_get(e, "attributes"), NULL, 0, &event->attributes, &event->n_attributes)) {
            return -1;
        }
        span->events[span->n_events++] = event;
    }
    return 0;
}

static int s_links(build_t *b, const msgpack_object *list, otlp_span_t *span)
{
    uint32_t n = list && list->type == MSGPACK_OBJECT_ARRAY ? list->via.array.size : 0;
    if (!(span->links = drv_otlp_array(b, n))) {
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        const msgpack_object *l = &list->via.array.ptr[i];
        otlp_link_t *link = drv_otlp_new(b, &opentelemetry__proto__trace__v1__span__link__descriptor);
        if (!link) {
            return -1;
        }
        link->trace_id = drv_otlp_id(b, drv_otlp_get(l, "trace_id"));
        link->span_id = drv_otlp_id(b, drv_otlp_get(l, "span_id"));
        link->trace_state = drv_otlp_string_of(b, drv_otlp_get(l, "trace_state"));
        link->flags = s_u32(drv_otlp_get(l, "flags"));
        link->dropped_attributes_count = s_u32(drv_otlp_get(l, "dropped_attributes_count"));
        if (drv_otlp_attributes(b, drv_otlp_get(l, "attributes"), NULL, 0, &link->attributes, &link->n_attributes)) {
            return -1;
        }
        span->links[span->n_links++] = link;
    }
    return 0;
}

otlp_span_t *drv_otlp_build_span(build_t *b, const msgpack_object *record, const msgpack_object_kv **extras)
{
    otlp_span_t *span = drv_otlp_new(b, &opentelemetry__proto__trace__v1__span__descriptor);
    if (!span) {
        return NULL;
    }
    size_t n = s_extras(record, s_span_taken, extras);
    span->trace_id = drv_otlp_id(b, drv_otlp_get(record, "trace_id"));
    span->span_id = drv_otlp_id(b, drv_otlp_get(record, "span_id"));
    span->parent_span_id = drv_otlp_id(b, drv_otlp_get(record, "parent_span_id"));
    span->trace_state = drv_otlp_string_of(b, drv_otlp_get(record, "trace_state"));
    span->name = drv_otlp_string_of(b, drv_otlp_get(record, "name"));
    span->kind = (int)s_u64(drv_otlp_get(record, "kind"));
    span->start_time_unix_nano = s_u64(drv_otlp_get(record, "start_time_unix_nano"));
    span->end_time_unix_nano = s_u64(drv_otlp_get(record, "end_time_unix_nano"));
    span->flags = s_u32(drv_otlp_get(record, "flags"));
    span->dropped_attributes_count = s_u32(drv_otlp_get(record, "dropped_attributes_count"));
    span->dropped_events_count = s_u32(drv_otlp_get(record, "dropped_events_count"));
    span->dropped_links_count = s_u32(drv_otlp_get(record, "dropped_links_count"));
    const msgpack_object *status = drv_otlp_get(record, "status");
    if (status) {
        span->status = drv_otlp_new(b, &opentelemetry__proto__trace__v1__status__descriptor);
        if (!span->status) {
            return NULL;
        }
        const msgpack_object *code = drv_otlp_get(status, "code");
        span->status->code = s_uint(code) && code->via.u64 <= 2 ? (int)code->via.u64 : 0;
        span->status->message = drv_otlp_string_of(b, drv_otlp_get(status, "message"));
    }
    if (s_events(b, drv_otlp_get(record, "events"), span) || s_links(b, drv_otlp_get(record, "links"), span) ||
        drv_otlp_attributes(b, drv_otlp_get(record, "attributes"), extras, n, &span->attributes, &span->n_attributes)) {
        return NULL;
    }
    return span;
}
