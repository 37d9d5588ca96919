/*  drv_prom_write — a batch of metric records as one WriteRequest
    (drv_prom.h). Each record (one data point) gives its samples: a gauge
    or a sum one, a histogram its _bucket{le} series (counts made
    cumulative, +Inf the point's count), _sum and _count, a summary its
    {quantile} series, _sum and _count. A sample's labels are __name__,
    the point's attributes and job/instance from its resource
    (service.namespace/service.name, service.instance.id), sorted by name;
    a resource's other attributes go once per batch as target_info. The
    samples of one series are sent in time order, in one TimeSeries. */
#include "drv_prom.h"
#include "drv_prom_series.h"
#include "drv_record.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char name[DRV_PROM_NAME_MAX], unit[64]; // an OpenTelemetry metric's name and unit...
    size_t nlen, ulen;
    bool counter, gauge;
    char base[DRV_PROM_NAME_MAX]; // ...and its Prometheus name
} metric_name_t;

typedef struct {
    drv_prom_series_t series;
    metric_name_t last;
} encoder_t;

static const msgpack_object *s_get(const msgpack_object *map, const char *key)
{
    if (!map || map->type != MSGPACK_OBJECT_MAP) {
        return NULL;
    }
    size_t len = strlen(key);
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == len && !memcmp(k->via.str.ptr, key, len)) {
            return &map->via.map.ptr[i].val;
        }
    }
    return NULL;
}

static bool s_is(const msgpack_object *o, const char *text)
{
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(text) &&
           !memcmp(o->via.str.ptr, text, o->via.str.size);
}

//  A value as a label's text (*len bytes): strings as they are (in the
//  record), the rest as JSON would say them.
static const char *s_value_text(encoder_t *e, const msgpack_object *v, size_t *len)
{
    char text[64];
    switch (v->type) {
    case MSGPACK_OBJECT_STR:
        *len = v->via.str.size;
        return v->via.str.ptr;
    case MSGPACK_OBJECT_BOOLEAN:
        *len = v->via.boolean ? 4 : 5;
        return v->via.boolean ? "true" : "false";
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        snprintf(text, sizeof text, "%llu", (unsigned long long)v->via.u64);
        break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        snprintf(text, sizeof text, "%lld", (long long)v->via.i64);
        break;
    case MSGPACK_OBJECT_FLOAT64:
    case MSGPACK_OBJECT_FLOAT32:
        drv_prom_float_text(v->via.f64, text, sizeof text);
        break;
    default:
        text[0] = 0; // maps and arrays say nothing as a label
    }
    *len = strlen(text);
    return drv_prom_series_text(&e->series, text, *len);
}

//  An attribute's key as a label name (*len bytes): as it is when it is one
//  already, else made one (drv_prom_label_name) in the zone.
static const char *s_label_name(encoder_t *e, const msgpack_object *key, size_t *len)
{
    const char *k = key->via.str.ptr;
    bool valid = key->via.str.size > 0 && key->via.str.size < DRV_PROM_NAME_MAX && !(k[0] >= '0' && k[0] <= '9');
    for (size_t i = 0; valid && i < key->via.str.size; i++) {
        char c = k[i];
        valid = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    }
    if (valid) {
        *len = key->via.str.size;
        return k;
    }
    char name[DRV_PROM_NAME_MAX];
    drv_prom_label_name(k, key->via.str.size, name, sizeof name);
    *len = strlen(name);
    return drv_prom_series_text(&e->series, name, *len);
}

//  The fields of a metric record the encoder reads, found in one pass.
typedef struct {
    const msgpack_object *signal, *name, *unit, *type, *time, *monotonic, *temporality, *attributes, *resource, *value,
        *sum, *count, *bounds, *counts, *quantiles;
} fields_t;

static void s_fields(const msgpack_object *record, fields_t *f)
{
    static const struct {
        const char *key;
        size_t at;
    } wanted[] = {{"signal", offsetof(fields_t, signal)},
                  {"name", offsetof(fields_t, name)},
                  {"unit", offsetof(fields_t, unit)},
                  {"type", offsetof(fields_t, type)},
                  {"time_unix_nano", offsetof(fields_t, time)},
                  {"is_monotonic", offsetof(fields_t, monotonic)},
                  {"aggregation_temporality", offsetof(fields_t, temporality)},
                  {"attributes", offsetof(fields_t, attributes)},
                  {"resource", offsetof(fields_t, resource)},
                  {"value", offsetof(fields_t, value)},
                  {"sum", offsetof(fields_t, sum)},
                  {"count", offsetof(fields_t, count)},
                  {"explicit_bounds", offsetof(fields_t, bounds)},
                  {"bucket_counts", offsetof(fields_t, counts)},
                  {"quantile_values", offsetof(fields_t, quantiles)}};
    memset(f, 0, sizeof *f);
    for (uint32_t i = 0; record && record->type == MSGPACK_OBJECT_MAP && i < record->via.map.size; i++) {
        const msgpack_object *k = &record->via.map.ptr[i].key;
        for (size_t w = 0; k->type == MSGPACK_OBJECT_STR && w < sizeof wanted / sizeof *wanted; w++) {
            if (k->via.str.size == strlen(wanted[w].key) && !memcmp(k->via.str.ptr, wanted[w].key, k->via.str.size)) {
                const msgpack_object **slot = (const msgpack_object **)((char *)f + wanted[w].at);
                *slot = *slot ? *slot : &record->via.map.ptr[i].val; // a key twice: the first, as s_get
                break;
            }
        }
    }
}

static const char *s_refusal(const fields_t *f)
{
    if (!s_is(f->signal, "metric")) {
        return "not a metric record: remote write carries metrics only";
    }
    if (!f->name || f->name->type != MSGPACK_OBJECT_STR || f->name->via.str.size == 0) {
        return "a metric record without a name";
    }
    bool cumulative =
        f->temporality && f->temporality->type == MSGPACK_OBJECT_POSITIVE_INTEGER && f->temporality->via.u64 == 2;
    if (s_is(f->type, "gauge") || s_is(f->type, "summary")) {
        return NULL;
    }
    if (s_is(f->type, "sum") || s_is(f->type, "histogram")) {
        return cumulative ? NULL : "a delta sum or histogram: Prometheus holds cumulative ones only";
    }
    if (s_is(f->type, "exponential_histogram")) {
        return "an exponential histogram: remote write 1.0 has no native histograms";
    }
    return "a metric record without a known type";
}

//  A hash of a map's entries whatever their order: each key with its value
//  (a scalar's bytes; a map or array, which says nothing as a label, its
//  type), summed. skip_service: service.* left out (they are job/instance).
static uint64_t s_map_hash(const msgpack_object *map, bool skip_service, bool *any)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; map && map->type == MSGPACK_OBJECT_MAP && i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key, *v = &map->via.map.ptr[i].val;
        if (k->type != MSGPACK_OBJECT_STR ||
            (skip_service &&
             (s_is(k, "service.name") || s_is(k, "service.namespace") || s_is(k, "service.instance.id")))) {
            continue;
        }
        uint64_t h = drv_prom_hash(k->via.str.ptr, k->via.str.size);
        if (v->type == MSGPACK_OBJECT_STR) {
            h ^= drv_prom_hash(v->via.str.ptr, v->via.str.size) * 31;
        } else if (v->type != MSGPACK_OBJECT_MAP && v->type != MSGPACK_OBJECT_ARRAY) {
            h ^= drv_prom_hash((const char *)&v->via, sizeof v->via) * 31;
        }
        sum += h ^ (uint64_t)v->type;
        *any = true;
    }
    return sum;
}

int drv_prom_shard(const msgpack_object *record, int shards, const char **why)
{
    fields_t f;
    s_fields(record, &f);
    if ((*why = s_refusal(&f))) {
        return -1;
    }
    bool target_info = false;
    uint64_t hash = s_map_hash(f.resource, true, &target_info);
    if (!target_info) { // the series: the metric and its attributes
        bool any = false;
        hash = s_map_hash(f.attributes, false, &any);
        hash +=
            f.name && f.name->type == MSGPACK_OBJECT_STR ? drv_prom_hash(f.name->via.str.ptr, f.name->via.str.size) : 0;
        hash += s_map_hash(f.resource, false, &any);
    }
    return (int)(hash % (uint64_t)shards);
}

const char *drv_prom_refusal(const msgpack_object *record)
{
    fields_t f;
    s_fields(record, &f);
    return s_refusal(&f);
}

#define LABELS_MAX DRV_PROM_LABELS_MAX // a point's attributes past this are not carried

typedef struct {
    drv_prom_label_t labels[LABELS_MAX + 4];
    size_t count; // the point's labels, __name__'s place first
} point_labels_t;

//  __name__ (empty for now), the point's attributes, then job and instance.
static void s_point_labels(encoder_t *e, const fields_t *f, point_labels_t *out, const char **job,
                           const char **instance)
{
    out->count = 1;
    out->labels[0] = drv_prom_label("__name__", NULL);
    const msgpack_object *attributes = f->attributes;
    for (uint32_t i = 0; attributes && attributes->type == MSGPACK_OBJECT_MAP && i < attributes->via.map.size &&
                         out->count < LABELS_MAX;
         i++) {
        const msgpack_object_kv *kv = &attributes->via.map.ptr[i];
        if (kv->key.type != MSGPACK_OBJECT_STR) {
            continue;
        }
        drv_prom_label_t *label = &out->labels[out->count++];
        label->name = s_label_name(e, &kv->key, &label->nlen);
        label->value = s_value_text(e, &kv->val, &label->vlen);
    }
    const msgpack_object *resource = f->resource;
    const msgpack_object *ns = s_get(resource, "service.namespace"), *service = s_get(resource, "service.name");
    const msgpack_object *id = s_get(resource, "service.instance.id");
    *job = *instance = NULL;
    if (service && service->type == MSGPACK_OBJECT_STR) {
        size_t len = service->via.str.size + (ns && ns->type == MSGPACK_OBJECT_STR ? ns->via.str.size + 1 : 0);
        char *text = drv_prom_series_alloc(&e->series, len + 1);
        if (text) {
            snprintf(text, len + 1, "%.*s%s%.*s", ns && ns->type == MSGPACK_OBJECT_STR ? (int)ns->via.str.size : 0,
                     ns && ns->type == MSGPACK_OBJECT_STR ? ns->via.str.ptr : "",
                     ns && ns->type == MSGPACK_OBJECT_STR ? "/" : "", (int)service->via.str.size, service->via.str.ptr);
        }
        *job = text;
        out->labels[out->count++] = drv_prom_label("job", text);
    }
    if (id && id->type == MSGPACK_OBJECT_STR) {
        *instance = drv_prom_series_text(&e->series, id->via.str.ptr, id->via.str.size);
        out->labels[out->count++] = drv_prom_label("instance", *instance);
    }
}

//  One sample of the point: __name__ name, plus an extra label (le, quantile) when given.
static void s_emit(encoder_t *e, const point_labels_t *base, const char *name, const char *extra,
                   const char *extra_value, double value, int64_t ms)
{
    drv_prom_label_t labels[LABELS_MAX + 5];
    memcpy(labels, base->labels, base->count * sizeof *labels);
    labels[0].value = name; // a series copies what it keeps (s_series_new)
    labels[0].vlen = strlen(name);
    size_t n = base->count;
    if (extra) {
        labels[n++] = drv_prom_label(extra, extra_value);
    }
    drv_prom_series_add(&e->series, labels, n, value, ms);
}

//  target_info of the point's resource: its attributes but service.*, once per batch.
static void s_target_info(encoder_t *e, const fields_t *f, const char *job, const char *instance, int64_t ms)
{
    const msgpack_object *resource = f->resource;
    drv_prom_label_t labels[LABELS_MAX + 3];
    size_t n = 0;
    labels[n++] = drv_prom_label("__name__", "target_info");
    for (uint32_t i = 0;
         resource && resource->type == MSGPACK_OBJECT_MAP && i < resource->via.map.size && n < LABELS_MAX; i++) {
        const msgpack_object_kv *kv = &resource->via.map.ptr[i];
        if (kv->key.type != MSGPACK_OBJECT_STR || s_is(&kv->key, "service.name") ||
            s_is(&kv->key, "service.namespace") || s_is(&kv->key, "service.instance.id")) {
            continue;
        }
        drv_prom_label_t *label = &labels[n++];
        label->name = s_label_name(e, &kv->key, &label->nlen);
        label->value = s_value_text(e, &kv->val, &label->vlen);
    }
    if (n == 1) {
        return; // nothing but service.*: no target_info
    }
    if (job) {
        labels[n++] = drv_prom_label("job", job);
    }
    if (instance) {
        labels[n++] = drv_prom_label("instance", instance);
    }
    //  Once per series: a second point of the resource finds it and adds no sample.
    n = drv_prom_labels_normalize(labels, n);
    if (!drv_prom_series_holds(&e->series, labels, n)) {
        drv_prom_series_add(&e->series, labels, n, 1, ms);
    }
}

//  The Prometheus name of the record's metric: the last one's again when
//  it is the same metric (a batch holds many points of one).
static const char *s_metric_name(encoder_t *e, const msgpack_object *name, const msgpack_object *unit, bool counter,
                                 bool gauge)
{
    metric_name_t *last = &e->last;
    const char *u = unit && unit->type == MSGPACK_OBJECT_STR ? unit->via.str.ptr : "";
    size_t ulen = unit && unit->type == MSGPACK_OBJECT_STR ? unit->via.str.size : 0;
    if (last->base[0] && last->counter == counter && last->gauge == gauge && last->nlen == name->via.str.size &&
        last->ulen == ulen && !memcmp(last->name, name->via.str.ptr, last->nlen) && !memcmp(last->unit, u, ulen)) {
        return last->base;
    }
    drv_prom_metric_name(name->via.str.ptr, name->via.str.size, u, ulen, counter, gauge, last->base, sizeof last->base);
    bool fits = name->via.str.size <= sizeof last->name && ulen <= sizeof last->unit;
    if (fits) {
        memcpy(last->name, name->via.str.ptr, name->via.str.size);
        memcpy(last->unit, u, ulen);
    }
    last->nlen = fits ? name->via.str.size : SIZE_MAX; // a name too long to keep is made each time
    last->ulen = ulen;
    last->counter = counter;
    last->gauge = gauge;
    return last->base;
}

static void s_record(encoder_t *e, const msgpack_object *record)
{
    fields_t f;
    s_fields(record, &f);
    if (s_refusal(&f)) {
        return;
    }
    const msgpack_object *name = f.name, *unit = f.unit, *type = f.type, *time = f.time;
    int64_t ms = time && time->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? (int64_t)(time->via.u64 / 1000000) : 0;
    const msgpack_object *monotonic = f.monotonic;
    bool counter =
        s_is(type, "sum") && monotonic && monotonic->type == MSGPACK_OBJECT_BOOLEAN && monotonic->via.boolean;
    bool gauge = s_is(type, "gauge") || (s_is(type, "sum") && !counter);
    char full[DRV_PROM_NAME_MAX + 16];
    const char *base = s_metric_name(e, name, unit, counter, gauge);
    point_labels_t point;
    point_labels_t *labels = &point;
    const char *job, *instance;
    s_point_labels(e, &f, labels, &job, &instance);
    s_target_info(e, &f, job, instance, ms);
    if (gauge || counter) {
        s_emit(e, labels, base, NULL, NULL, drv_record_number(f.value), ms);
        return;
    }
    const msgpack_object *sum = f.sum, *count = f.count;
    if (s_is(type, "histogram")) {
        const msgpack_object *bounds = f.bounds, *counts = f.counts;
        double cumulative = 0;
        char le[64];
        snprintf(full, sizeof full, "%s_bucket", base);
        for (uint32_t i = 0;
             bounds && counts && bounds->type == MSGPACK_OBJECT_ARRAY && counts->type == MSGPACK_OBJECT_ARRAY &&
             i < bounds->via.array.size && i < counts->via.array.size;
             i++) {
            cumulative += drv_record_number(&counts->via.array.ptr[i]);
            drv_prom_float_text(drv_record_number(&bounds->via.array.ptr[i]), le, sizeof le);
            s_emit(e, labels, full, "le", le, cumulative, ms);
        }
        s_emit(e, labels, full, "le", "+Inf", drv_record_number(count), ms);
    } else { // summary
        const msgpack_object *quantiles = f.quantiles;
        for (uint32_t i = 0; quantiles && quantiles->type == MSGPACK_OBJECT_ARRAY && i < quantiles->via.array.size;
             i++) {
            char q[64];
            drv_prom_float_text(drv_record_number(s_get(&quantiles->via.array.ptr[i], "quantile")), q, sizeof q);
            s_emit(e, labels, base, "quantile", q, drv_record_number(s_get(&quantiles->via.array.ptr[i], "value")), ms);
        }
    }
    if (sum) {
        snprintf(full, sizeof full, "%s_sum", base);
        s_emit(e, labels, full, NULL, NULL, drv_record_number(sum), ms);
    }
    snprintf(full, sizeof full, "%s_count", base);
    s_emit(e, labels, full, NULL, NULL, drv_record_number(count), ms);
}

int drv_prom_encode(const msgpack_object *records, size_t count, drv_buf_t *body, char *err, size_t errlen)
{
    encoder_t e = {0};
    int rc = drv_prom_series_init(&e.series);
    for (size_t i = 0; i < count && rc == 0 && !e.series.failed; i++) {
        s_record(&e, &records[i]);
    }
    rc = rc == 0 && !e.series.failed ? drv_prom_series_pack(&e.series, body) : -1;
    if (rc != 0) {
        snprintf(err, errlen, "out of memory encoding a remote-write request");
    }
    drv_prom_series_free(&e.series);
    return rc;
}
