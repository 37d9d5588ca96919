/*  drv_prom_points — the samples of one scrape as metric records
    (drv_prom_points.h), as OpenTelemetry's Prometheus compatibility
    specification maps them: a counter a cumulative monotonic sum, a gauge
    (and an untyped, info or stateset sample) a gauge, a histogram's
    _bucket{le}, _sum and _count one explicit-bucket histogram point per
    label set (counts no longer cumulative), a summary's {quantile}, _sum
    and _count one summary point. A counter or gauge keeps its sample's
    name (node_cpu_seconds_total); a histogram or summary its family's. */
#include "drv_prom_points.h"

#include <czmq.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static msgpack_object STR(const char *s)
{
    return (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)strlen(s), s}};
}

typedef struct {
    const char *name; // the record's
    drv_prom_type_t type;
    const char *help, *unit;
    msgpack_object attributes;
    int64_t ms;
    double value;
    double count, sum;
    bool has_count, has_sum;
    double *bounds, *counts; // histogram: le and the cumulative count; summary: quantile and value
    size_t n, cap;
} point_t;

struct drv_prom_points_t {
    msgpack_zone *zone;
    msgpack_object resource, scope, target; // target: the target's labels, a map
    int64_t now_ms;
    zhashx_t *by_key; // key -> index + 1
    point_t *points;
    size_t count, cap;
    bool failed;
};

static void *s_alloc(drv_prom_points_t *self, size_t size)
{
    void *p = msgpack_zone_malloc(self->zone, size ? size : 1);
    self->failed |= !p;
    return p;
}

static char *s_copy(drv_prom_points_t *self, const char *text)
{
    size_t len = strlen(text);
    char *copy = s_alloc(self, len + 1);
    if (copy) {
        memcpy(copy, text, len + 1);
    }
    return copy;
}

static int s_label_cmp(const void *a, const void *b)
{
    return strcmp(((const drv_prom_label_t *)a)->name, ((const drv_prom_label_t *)b)->name);
}

drv_prom_points_t *drv_prom_points_new(msgpack_zone *zone, const msgpack_object *resource, const msgpack_object *scope,
                                       const msgpack_object *target, int64_t now_ms)
{
    drv_prom_points_t *self = calloc(1, sizeof *self);
    if (!self) {
        return NULL;
    }
    self->zone = zone;
    self->resource = *resource;
    self->scope = *scope;
    self->target = *target;
    self->now_ms = now_ms;
    self->by_key = zhashx_new();
    if (!self->by_key) {
        free(self);
        return NULL;
    }
    return self;
}

void drv_prom_points_destroy(drv_prom_points_t **self_p)
{
    if (self_p && *self_p) {
        drv_prom_points_t *self = *self_p;
        for (size_t i = 0; i < self->count; i++) {
            free(self->points[i].bounds);
            free(self->points[i].counts);
        }
        free(self->points);
        zhashx_destroy(&self->by_key);
        free(self);
        *self_p = NULL;
    }
}

//  The point a sample adds to: found by its family and labels but le or quantile, or made.
static point_t *s_point(drv_prom_points_t *self, const drv_prom_sample_t *s, const char *name, const char *skip)
{
    drv_prom_label_t labels[DRV_PROM_TEXT_LABELS_MAX];
    size_t n = 0, keylen = strlen(name) + 2;
    for (size_t i = 0; i < s->label_count; i++) {
        if (!skip || strcmp(s->labels[i].name, skip)) {
            labels[n++] = s->labels[i];
            keylen += strlen(s->labels[i].name) + strlen(s->labels[i].value) + 2;
        }
    }
    qsort(labels, n, sizeof *labels, s_label_cmp);
    char *key = malloc(keylen);
    if (!key) {
        self->failed = true;
        return NULL;
    }
    strcpy(key, name);
    strcat(key, "\x01");
    for (size_t i = 0; i < n; i++) {
        strcat(key, labels[i].name);
        strcat(key, "\x02");
        strcat(key, labels[i].value);
        strcat(key, "\x03");
    }
    uintptr_t found = (uintptr_t)zhashx_lookup(self->by_key, key);
    if (found) {
        free(key);
        return &self->points[found - 1];
    }
    if (self->count == self->cap) {
        size_t cap = self->cap ? self->cap * 2 : 64;
        point_t *grown = realloc(self->points, cap * sizeof *grown);
        if (!grown) {
            free(key);
            self->failed = true;
            return NULL;
        }
        self->points = grown;
        self->cap = cap;
    }
    //  Attributes: the sample's labels, then the target's (which win, as Prometheus' target labels do).
    uint32_t targets = self->target.type == MSGPACK_OBJECT_MAP ? self->target.via.map.size : 0;
    msgpack_object_kv *kv = s_alloc(self, (n + targets) * sizeof *kv);
    uint32_t k = 0;
    for (size_t i = 0; kv && i < n; i++) {
        bool overridden = false;
        for (uint32_t t = 0; t < targets && !overridden; t++) {
            const msgpack_object *tk = &self->target.via.map.ptr[t].key;
            overridden = tk->via.str.size == strlen(labels[i].name) &&
                         !memcmp(tk->via.str.ptr, labels[i].name, tk->via.str.size);
        }
        if (!overridden) {
            kv[k].key = STR(s_copy(self, labels[i].name) ?: "");
            kv[k++].val = STR(s_copy(self, labels[i].value) ?: "");
        }
    }
    for (uint32_t t = 0; kv && t < targets; t++) {
        kv[k++] = self->target.via.map.ptr[t];
    }
    point_t *p = &self->points[self->count++];
    *p = (point_t){.name = s_copy(self, name),
                   .type = s->type,
                   .help = s_copy(self, s->help),
                   .unit = s_copy(self, s->unit),
                   .attributes = {.type = MSGPACK_OBJECT_MAP, .via.map = {.size = k, .ptr = kv}},
                   .ms = s->timestamp_ms >= 0 ? s->timestamp_ms : self->now_ms};
    zhashx_insert(self->by_key, key, (void *)(uintptr_t)self->count);
    free(key);
    return p;
}

static void s_pair(drv_prom_points_t *self, point_t *p, double x, double y)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        double *bounds = realloc(p->bounds, cap * sizeof *bounds);
        if (bounds) {
            p->bounds = bounds;
        }
        double *counts = bounds ? realloc(p->counts, cap * sizeof *counts) : NULL;
        if (!counts) {
            self->failed = true;
            return;
        }
        p->counts = counts;
        p->cap = cap;
    }
    p->bounds[p->n] = x;
    p->counts[p->n++] = y;
}

static bool s_ends(const char *name, const char *suffix)
{
    size_t a = strlen(name), b = strlen(suffix);
    return a > b && !strcmp(name + a - b, suffix);
}

static const char *s_label(const drv_prom_sample_t *s, const char *name)
{
    for (size_t i = 0; i < s->label_count; i++) {
        if (!strcmp(s->labels[i].name, name)) {
            return s->labels[i].value;
        }
    }
    return NULL;
}

void drv_prom_points_add(void *arg, const drv_prom_sample_t *s)
{
    drv_prom_points_t *self = arg;
    bool histogram = s->type == DRV_PROM_HISTOGRAM || s->type == DRV_PROM_GAUGEHISTOGRAM;
    bool summary = s->type == DRV_PROM_SUMMARY;
    if (s_ends(s->name, "_created") || s_ends(s->name, "_gcount") || s_ends(s->name, "_gsum")) {
        return; // a start time or a gauge histogram's extras: not carried
    }
    if (!histogram && !summary) {
        point_t *p = s_point(self, s, s->name, NULL);
        if (p) {
            p->value = s->value;
        }
        return;
    }
    const char *part = histogram ? "le" : "quantile";
    point_t *p = s_point(self, s, s->family, part);
    if (!p) {
        return;
    }
    if (s_ends(s->name, "_count")) {
        p->count = s->value;
        p->has_count = true;
    } else if (s_ends(s->name, "_sum")) {
        p->sum = s->value;
        p->has_sum = true;
    } else {
        const char *at = s_label(s, part);
        char *end;
        double x = at ? (strcmp(at, "+Inf") ? strtod(at, &end) : INFINITY) : NAN;
        if (at && !isnan(x)) {
            s_pair(self, p, x, s->value);
        }
    }
}

static int s_pair_cmp(const void *a, const void *b)
{
    double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return x < y ? -1 : x > y;
}

static msgpack_object s_float(double v)
{
    return (msgpack_object){.type = MSGPACK_OBJECT_FLOAT64, .via.f64 = v};
}

static msgpack_object s_uint(uint64_t v)
{
    return (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = v};
}

//  A count a target said as a float: 0 for what is not one (NaN, below 0), the largest there is past it.
static msgpack_object s_count(double v)
{
    return s_uint(!(v > 0) ? 0 : v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v);
}

//  A histogram's buckets: bounds but +Inf, counts no longer cumulative.
static void s_histogram(drv_prom_points_t *self, point_t *p, msgpack_object_kv *kv, uint32_t *n)
{
    double(*pairs)[2] = malloc((p->n ? p->n : 1) * sizeof *pairs);
    if (!pairs) {
        self->failed = true;
        return;
    }
    for (size_t i = 0; i < p->n; i++) {
        pairs[i][0] = p->bounds[i];
        pairs[i][1] = p->counts[i];
    }
    qsort(pairs, p->n, sizeof *pairs, s_pair_cmp);
    size_t finite = 0;
    while (finite < p->n && !isinf(pairs[finite][0])) {
        finite++;
    }
    double count = p->has_count ? p->count : finite < p->n ? pairs[finite][1] : 0;
    msgpack_object *bounds = s_alloc(self, (finite ? finite : 1) * sizeof *bounds);
    msgpack_object *counts = s_alloc(self, (finite + 1) * sizeof *counts);
    double before = 0;
    for (size_t i = 0; bounds && counts && i < finite; i++) {
        bounds[i] = s_float(pairs[i][0]);
        double c = pairs[i][1] - before;
        counts[i] = s_count(c);
        before = pairs[i][1];
    }
    if (counts) {
        counts[finite] = s_count(count - before);
    }
    free(pairs);
    if (!bounds || !counts) {
        return;
    }
    kv[(*n)++] = (msgpack_object_kv){STR("count"), s_count(count)};
    kv[(*n)++] =
        (msgpack_object_kv){STR("bucket_counts"),
                            {.type = MSGPACK_OBJECT_ARRAY, .via.array = {.size = (uint32_t)finite + 1, .ptr = counts}}};
    kv[(*n)++] = (msgpack_object_kv){
        STR("explicit_bounds"), {.type = MSGPACK_OBJECT_ARRAY, .via.array = {.size = (uint32_t)finite, .ptr = bounds}}};
}

static void s_summary(drv_prom_points_t *self, point_t *p, msgpack_object_kv *kv, uint32_t *n)
{
    msgpack_object *quantiles = s_alloc(self, (p->n ? p->n : 1) * sizeof *quantiles);
    for (size_t i = 0; quantiles && i < p->n; i++) {
        msgpack_object_kv *q = s_alloc(self, 2 * sizeof *q);
        if (!q) {
            return;
        }
        q[0] = (msgpack_object_kv){STR("quantile"), s_float(p->bounds[i])};
        q[1] = (msgpack_object_kv){STR("value"), s_float(p->counts[i])};
        quantiles[i] = (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {.size = 2, .ptr = q}};
    }
    kv[(*n)++] = (msgpack_object_kv){STR("count"), s_count(p->count)};
    kv[(*n)++] =
        (msgpack_object_kv){STR("quantile_values"),
                            {.type = MSGPACK_OBJECT_ARRAY, .via.array = {.size = (uint32_t)p->n, .ptr = quantiles}}};
}

int drv_prom_points_records(drv_prom_points_t *self, msgpack_object **records)
{
    msgpack_object *out = s_alloc(self, (self->count ? self->count : 1) * sizeof *out);
    for (size_t i = 0; out && i < self->count; i++) {
        point_t *p = &self->points[i];
        msgpack_object_kv *kv = s_alloc(self, 16 * sizeof *kv);
        if (!kv) {
            break;
        }
        bool histogram = p->type == DRV_PROM_HISTOGRAM || p->type == DRV_PROM_GAUGEHISTOGRAM;
        bool summary = p->type == DRV_PROM_SUMMARY, counter = p->type == DRV_PROM_COUNTER;
        uint32_t n = 0;
        kv[n++] = (msgpack_object_kv){STR("signal"), STR("metric")};
        kv[n++] = (msgpack_object_kv){STR("name"), STR(p->name ?: "")};
        kv[n++] = (msgpack_object_kv){STR("description"), STR(p->help ?: "")};
        kv[n++] = (msgpack_object_kv){STR("unit"), STR(p->unit ?: "")};
        kv[n++] = (msgpack_object_kv){STR("type"), histogram ? STR("histogram")
                                                   : summary ? STR("summary")
                                                   : counter ? STR("sum")
                                                             : STR("gauge")};
        if (histogram || counter) {
            kv[n++] = (msgpack_object_kv){STR("aggregation_temporality"), s_uint(2)};
        }
        if (counter) {
            kv[n++] = (msgpack_object_kv){STR("is_monotonic"), {.type = MSGPACK_OBJECT_BOOLEAN, .via.boolean = true}};
        }
        kv[n++] = (msgpack_object_kv){STR("time_unix_nano"), s_uint(p->ms > 0 ? (uint64_t)p->ms * 1000000u : 0)};
        kv[n++] = (msgpack_object_kv){STR("attributes"), p->attributes};
        if (histogram) {
            s_histogram(self, p, kv, &n);
        } else if (summary) {
            s_summary(self, p, kv, &n);
        } else {
            kv[n++] = (msgpack_object_kv){STR("value"), s_float(p->value)};
        }
        if ((histogram || summary) && p->has_sum) {
            kv[n++] = (msgpack_object_kv){STR("sum"), s_float(p->sum)};
        }
        kv[n++] = (msgpack_object_kv){STR("resource"), self->resource};
        kv[n++] = (msgpack_object_kv){STR("scope"), self->scope};
        out[i] = (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {.size = n, .ptr = kv}};
    }
    *records = out;
    return self->failed ? -1 : (int)self->count;
}
