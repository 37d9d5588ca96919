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
#include "drv_record.h"

#include "prometheus/remote.pb-c.h"

#include <czmq.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *name, *value;
} label_t;

typedef struct {
    Prometheus__TimeSeries ts;
    size_t label_cap, sample_cap;
} series_t;

typedef struct {
    void **blocks; // everything allocated for this request, freed at its end
    size_t count, cap;
    zhashx_t *by_key;  // labels as text -> series_t
    series_t **series; // in the order first seen
    size_t series_count, series_cap;
    bool failed;
} encoder_t;

static void *s_alloc(encoder_t *e, size_t size)
{
    if (e->count == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 256;
        void **grown = realloc(e->blocks, cap * sizeof *grown);
        if (!grown) {
            e->failed = true;
            return NULL;
        }
        e->blocks = grown;
        e->cap = cap;
    }
    void *block = calloc(1, size ? size : 1);
    if (!block) {
        e->failed = true;
        return NULL;
    }
    return e->blocks[e->count++] = block;
}

static char *s_strndup(encoder_t *e, const char *text, size_t len)
{
    char *copy = s_alloc(e, len + 1);
    if (copy) {
        memcpy(copy, text, len);
    }
    return copy;
}

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

//  A value as a label's text: strings as they are, the rest as JSON would say them.
static char *s_value_text(encoder_t *e, const msgpack_object *v)
{
    char text[64];
    switch (v->type) {
    case MSGPACK_OBJECT_STR:
        return s_strndup(e, v->via.str.ptr, v->via.str.size);
    case MSGPACK_OBJECT_BOOLEAN:
        return s_strndup(e, v->via.boolean ? "true" : "false", v->via.boolean ? 4 : 5);
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
    return s_strndup(e, text, strlen(text));
}

const char *drv_prom_refusal(const msgpack_object *record)
{
    if (!s_is(s_get(record, "signal"), "metric")) {
        return "not a metric record: remote write carries metrics only";
    }
    const msgpack_object *name = s_get(record, "name");
    if (!name || name->type != MSGPACK_OBJECT_STR || name->via.str.size == 0) {
        return "a metric record without a name";
    }
    const msgpack_object *type = s_get(record, "type");
    const msgpack_object *temporality = s_get(record, "aggregation_temporality");
    bool cumulative = temporality && temporality->type == MSGPACK_OBJECT_POSITIVE_INTEGER && temporality->via.u64 == 2;
    if (s_is(type, "gauge") || s_is(type, "summary")) {
        return NULL;
    }
    if (s_is(type, "sum") || s_is(type, "histogram")) {
        return cumulative ? NULL : "a delta sum or histogram: Prometheus holds cumulative ones only";
    }
    if (s_is(type, "exponential_histogram")) {
        return "an exponential histogram: remote write 1.0 has no native histograms";
    }
    return "a metric record without a known type";
}

static int s_label_cmp(const void *a, const void *b)
{
    return strcmp(((const label_t *)a)->name, ((const label_t *)b)->name);
}

static int s_sample_cmp(const void *a, const void *b)
{
    int64_t x = (*(Prometheus__Sample *const *)a)->timestamp, y = (*(Prometheus__Sample *const *)b)->timestamp;
    return x < y ? -1 : x > y;
}

//  The sample value at ms with labels (name first, n of them): into its series.
static void s_sample(encoder_t *e, label_t *labels, size_t n, double value, int64_t ms)
{
    qsort(labels, n, sizeof *labels, s_label_cmp);
    size_t keylen = 1, kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (!labels[i].name[0] || !labels[i].value || !labels[i].value[0] ||
            (kept && !strcmp(labels[kept - 1].name, labels[i].name))) {
            continue; // an empty name or value is no label; of a name twice one stands
        }
        labels[kept++] = labels[i];
        keylen += strlen(labels[i].name) + strlen(labels[i].value) + 2;
    }
    char *key = s_alloc(e, keylen);
    if (!key) {
        return;
    }
    for (size_t i = 0; i < kept; i++) {
        strcat(key, labels[i].name);
        strcat(key, "\x01");
        strcat(key, labels[i].value);
        strcat(key, "\x02");
    }
    series_t *s = zhashx_lookup(e->by_key, key);
    if (!s) {
        s = s_alloc(e, sizeof *s);
        Prometheus__Label **list = s_alloc(e, (kept ? kept : 1) * sizeof *list);
        if (!s || !list) {
            return;
        }
        prometheus__time_series__init(&s->ts);
        for (size_t i = 0; i < kept; i++) {
            Prometheus__Label *label = s_alloc(e, sizeof *label);
            if (!label) {
                return;
            }
            prometheus__label__init(label);
            label->name = labels[i].name;
            label->value = labels[i].value;
            list[i] = label;
        }
        s->ts.labels = list;
        s->ts.n_labels = kept;
        if (e->series_count == e->series_cap) {
            size_t cap = e->series_cap ? e->series_cap * 2 : 64;
            series_t **grown = s_alloc(e, cap * sizeof *grown);
            if (!grown) {
                return;
            }
            if (e->series_count) {
                memcpy(grown, e->series, e->series_count * sizeof *grown);
            }
            e->series = grown;
            e->series_cap = cap;
        }
        e->series[e->series_count++] = s;
        zhashx_insert(e->by_key, key, s);
    }
    if (s->ts.n_samples == s->sample_cap) {
        size_t cap = s->sample_cap ? s->sample_cap * 2 : 4;
        Prometheus__Sample **grown = s_alloc(e, cap * sizeof *grown);
        if (!grown) {
            return;
        }
        if (s->ts.n_samples) {
            memcpy(grown, s->ts.samples, s->ts.n_samples * sizeof *grown);
        }
        s->ts.samples = grown;
        s->sample_cap = cap;
    }
    Prometheus__Sample *sample = s_alloc(e, sizeof *sample);
    if (!sample) {
        return;
    }
    prometheus__sample__init(sample);
    sample->value = value;
    sample->timestamp = ms;
    s->ts.samples[s->ts.n_samples++] = sample;
}

#define LABELS_MAX DRV_PROM_LABELS_MAX // a point's attributes past this are not carried

typedef struct {
    label_t labels[LABELS_MAX + 4];
    size_t count; // the point's labels, __name__'s place first
} point_labels_t;

//  __name__ (empty for now), the point's attributes, then job and instance.
static void s_point_labels(encoder_t *e, const msgpack_object *record, point_labels_t *out, const char **job,
                           const char **instance)
{
    out->count = 1;
    out->labels[0] = (label_t){"__name__", NULL};
    const msgpack_object *attributes = s_get(record, "attributes");
    for (uint32_t i = 0; attributes && attributes->type == MSGPACK_OBJECT_MAP && i < attributes->via.map.size &&
                         out->count < LABELS_MAX;
         i++) {
        const msgpack_object_kv *kv = &attributes->via.map.ptr[i];
        if (kv->key.type != MSGPACK_OBJECT_STR) {
            continue;
        }
        char name[DRV_PROM_NAME_MAX];
        drv_prom_label_name(kv->key.via.str.ptr, kv->key.via.str.size, name, sizeof name);
        out->labels[out->count++] = (label_t){s_strndup(e, name, strlen(name)), s_value_text(e, &kv->val)};
    }
    const msgpack_object *resource = s_get(record, "resource");
    const msgpack_object *ns = s_get(resource, "service.namespace"), *service = s_get(resource, "service.name");
    const msgpack_object *id = s_get(resource, "service.instance.id");
    *job = *instance = NULL;
    if (service && service->type == MSGPACK_OBJECT_STR) {
        size_t len = service->via.str.size + (ns && ns->type == MSGPACK_OBJECT_STR ? ns->via.str.size + 1 : 0);
        char *text = s_alloc(e, len + 1);
        if (text && ns && ns->type == MSGPACK_OBJECT_STR) {
            snprintf(text, len + 1, "%.*s/%.*s", (int)ns->via.str.size, ns->via.str.ptr, (int)service->via.str.size,
                     service->via.str.ptr);
        } else if (text) {
            memcpy(text, service->via.str.ptr, service->via.str.size);
        }
        *job = text;
        out->labels[out->count++] = (label_t){"job", text};
    }
    if (id && id->type == MSGPACK_OBJECT_STR) {
        *instance = s_strndup(e, id->via.str.ptr, id->via.str.size);
        out->labels[out->count++] = (label_t){"instance", (char *)*instance};
    }
}

//  One sample of the point: __name__ name, plus an extra label (le, quantile) when given.
static void s_emit(encoder_t *e, const point_labels_t *base, const char *name, const char *extra,
                   const char *extra_value, double value, int64_t ms)
{
    label_t labels[LABELS_MAX + 5];
    memcpy(labels, base->labels, base->count * sizeof *labels);
    labels[0].value = s_strndup(e, name, strlen(name));
    size_t n = base->count;
    if (extra) {
        labels[n++] = (label_t){(char *)extra, s_strndup(e, extra_value, strlen(extra_value))};
    }
    s_sample(e, labels, n, value, ms);
}

//  target_info of the point's resource: its attributes but service.*, once per batch.
static void s_target_info(encoder_t *e, const msgpack_object *record, const char *job, const char *instance, int64_t ms)
{
    const msgpack_object *resource = s_get(record, "resource");
    label_t labels[LABELS_MAX + 3];
    size_t n = 0;
    labels[n++] = (label_t){"__name__", "target_info"};
    for (uint32_t i = 0;
         resource && resource->type == MSGPACK_OBJECT_MAP && i < resource->via.map.size && n < LABELS_MAX; i++) {
        const msgpack_object_kv *kv = &resource->via.map.ptr[i];
        if (kv->key.type != MSGPACK_OBJECT_STR || s_is(&kv->key, "service.name") ||
            s_is(&kv->key, "service.namespace") || s_is(&kv->key, "service.instance.id")) {
            continue;
        }
        char name[DRV_PROM_NAME_MAX];
        drv_prom_label_name(kv->key.via.str.ptr, kv->key.via.str.size, name, sizeof name);
        labels[n++] = (label_t){s_strndup(e, name, strlen(name)), s_value_text(e, &kv->val)};
    }
    if (n == 1) {
        return; // nothing but service.*: no target_info
    }
    if (job) {
        labels[n++] = (label_t){"job", (char *)job};
    }
    if (instance) {
        labels[n++] = (label_t){"instance", (char *)instance};
    }
    label_t copy[LABELS_MAX + 3];
    memcpy(copy, labels, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, s_label_cmp);
    //  Once per series: a second point of the resource finds it and adds no sample.
    size_t keylen = 1;
    for (size_t i = 0; i < n; i++) {
        keylen += strlen(copy[i].name) + (copy[i].value ? strlen(copy[i].value) : 0) + 2;
    }
    char *key = s_alloc(e, keylen);
    for (size_t i = 0; key && i < n; i++) {
        if (copy[i].value && copy[i].value[0]) {
            strcat(key, copy[i].name);
            strcat(key, "\x01");
            strcat(key, copy[i].value);
            strcat(key, "\x02");
        }
    }
    if (key && !zhashx_lookup(e->by_key, key)) {
        s_sample(e, labels, n, 1, ms);
    }
}

static void s_record(encoder_t *e, const msgpack_object *record)
{
    const msgpack_object *name = s_get(record, "name"), *unit = s_get(record, "unit"), *type = s_get(record, "type");
    const msgpack_object *time = s_get(record, "time_unix_nano");
    if (!name || name->type != MSGPACK_OBJECT_STR || drv_prom_refusal(record)) {
        return;
    }
    int64_t ms = time && time->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? (int64_t)(time->via.u64 / 1000000) : 0;
    const msgpack_object *monotonic = s_get(record, "is_monotonic");
    bool counter =
        s_is(type, "sum") && monotonic && monotonic->type == MSGPACK_OBJECT_BOOLEAN && monotonic->via.boolean;
    bool gauge = s_is(type, "gauge") || (s_is(type, "sum") && !counter);
    char base[DRV_PROM_NAME_MAX], full[DRV_PROM_NAME_MAX + 16];
    drv_prom_metric_name(
        name->via.str.ptr, name->via.str.size, unit && unit->type == MSGPACK_OBJECT_STR ? unit->via.str.ptr : "",
        unit && unit->type == MSGPACK_OBJECT_STR ? unit->via.str.size : 0, counter, gauge, base, sizeof base);
    point_labels_t *labels = s_alloc(e, sizeof *labels);
    if (!labels) {
        return;
    }
    const char *job, *instance;
    s_point_labels(e, record, labels, &job, &instance);
    s_target_info(e, record, job, instance, ms);
    if (gauge || counter) {
        s_emit(e, labels, base, NULL, NULL, drv_record_number(s_get(record, "value")), ms);
        return;
    }
    const msgpack_object *sum = s_get(record, "sum"), *count = s_get(record, "count");
    if (s_is(type, "histogram")) {
        const msgpack_object *bounds = s_get(record, "explicit_bounds"), *counts = s_get(record, "bucket_counts");
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
        const msgpack_object *quantiles = s_get(record, "quantile_values");
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
    encoder_t e = {.by_key = zhashx_new()};
    for (size_t i = 0; i < count && e.by_key && !e.failed; i++) {
        s_record(&e, &records[i]);
    }
    Prometheus__WriteRequest request = PROMETHEUS__WRITE_REQUEST__INIT;
    Prometheus__TimeSeries **list = e.failed || !e.by_key ? NULL : s_alloc(&e, (e.series_count + 1) * sizeof *list);
    for (size_t i = 0; list && i < e.series_count; i++) {
        Prometheus__TimeSeries *ts = &e.series[i]->ts;
        qsort(ts->samples, ts->n_samples, sizeof *ts->samples, s_sample_cmp); // a series' samples in time order
        list[i] = ts;
    }
    int rc = -1;
    if (list) {
        request.timeseries = list;
        request.n_timeseries = e.series_count;
        size_t size = prometheus__write_request__get_packed_size(&request);
        uint8_t *packed = malloc(size ? size : 1);
        size_t room = snappy_max_compressed_length(size);
        if (packed && drv_buf_reserve(body, room) == 0) {
            prometheus__write_request__pack(&request, packed);
            size_t written = room;
            rc = snappy_compress((const char *)packed, size, body->data + body->len, &written) == SNAPPY_OK ? 0 : -1;
            body->len += rc == 0 ? written : 0;
        }
        free(packed);
    }
    if (rc != 0) {
        snprintf(err, errlen, "out of memory encoding a remote-write request");
    }
    for (size_t i = 0; i < e.count; i++) {
        free(e.blocks[i]);
    }
    free(e.blocks);
    zhashx_destroy(&e.by_key);
    return rc;
}
