/*  drv_otlp_json_metrics — an OTLP/JSON metrics request into the structs
    (drv_otlp_json.h's rules: lowerCamelCase or proto names, 64-bit
    integers as numbers or decimal strings, enums as numbers or names, ids
    in hex; doubles as numbers or "NaN", "Infinity", "-Infinity"). Built as
    protobuf-c would, so protobuf_c_message_free_unpacked frees it whole or
    half-built: a oneof's case is set only once its message exists, a
    repeated field's count only counts what is there. */
#include "drv_otlp_json_internal.h"

#include <math.h>
#include <string.h>

static const char *const s_temporalities[] = {"AGGREGATION_TEMPORALITY_UNSPECIFIED", "AGGREGATION_TEMPORALITY_DELTA",
                                              "AGGREGATION_TEMPORALITY_CUMULATIVE"};

static double s_double_value(ctx_t *c, const json_t *v, const char *field)
{
    if (!v || json_is_null(v)) {
        return 0;
    }
    if (json_is_number(v)) {
        return json_number_value(v);
    }
    const char *s = json_string_value(v);
    if (s && !strcmp(s, "NaN")) {
        return NAN;
    }
    if (s && (!strcmp(s, "Infinity") || !strcmp(s, "-Infinity"))) {
        return s[0] == '-' ? -INFINITY : INFINITY;
    }
    drv_otlp_json_fail(c, field, "must be a number");
    return 0;
}

static double s_double(ctx_t *c, const json_t *obj, const char *field)
{
    return s_double_value(c, drv_otlp_json_get(obj, field), field);
}

//  A list of numbers: *n of them in a malloc'd array (NULL when none).
static uint64_t *s_uints(ctx_t *c, const json_t *obj, const char *field, size_t *n)
{
    *n = 0;
    json_t *list = drv_otlp_json_get(obj, field);
    if (!list || json_is_null(list)) {
        return NULL;
    }
    if (!json_is_array(list)) {
        drv_otlp_json_fail(c, field, "must be a list of unsigned integers");
        return NULL;
    }
    uint64_t *out = drv_otlp_json_alloc(c, (json_array_size(list) + 1) * sizeof *out);
    for (size_t i = 0; out && i < json_array_size(list) && !c->failed; i++) {
        int64_t v = drv_otlp_json_int64(c, json_array_get(list, i), field);
        if (v < 0) {
            drv_otlp_json_fail(c, field, "must be a list of unsigned integers");
        }
        out[(*n)++] = (uint64_t)v;
    }
    return out;
}

static double *s_doubles(ctx_t *c, const json_t *obj, const char *field, size_t *n)
{
    *n = 0;
    json_t *list = drv_otlp_json_get(obj, field);
    if (!list || json_is_null(list)) {
        return NULL;
    }
    if (!json_is_array(list)) {
        drv_otlp_json_fail(c, field, "must be a list of numbers");
        return NULL;
    }
    double *out = drv_otlp_json_alloc(c, (json_array_size(list) + 1) * sizeof *out);
    for (size_t i = 0; out && i < json_array_size(list) && !c->failed; i++) {
        out[(*n)++] = s_double_value(c, json_array_get(list, i), field);
    }
    return out;
}

//  ---------------------------------------------------------------- points

static void *s_exemplar(ctx_t *c, const json_t *v)
{
    otlp_exemplar_t *e = drv_otlp_json_alloc(c, sizeof *e);
    if (!e) {
        return NULL;
    }
    opentelemetry__proto__metrics__v1__exemplar__init(e);
    e->filtered_attributes = drv_otlp_json_attributes(c, v, "filteredAttributes", &e->n_filtered_attributes, 0);
    e->time_unix_nano = drv_otlp_json_uint(c, v, "timeUnixNano", UINT64_MAX);
    if (drv_otlp_json_get(v, "asInt")) {
        e->value_case = OPENTELEMETRY__PROTO__METRICS__V1__EXEMPLAR__VALUE_AS_INT;
        e->as_int = drv_otlp_json_int64(c, drv_otlp_json_get(v, "asInt"), "asInt");
    } else if (drv_otlp_json_get(v, "asDouble")) {
        e->value_case = OPENTELEMETRY__PROTO__METRICS__V1__EXEMPLAR__VALUE_AS_DOUBLE;
        e->as_double = s_double(c, v, "asDouble");
    }
    e->span_id = drv_otlp_json_hex_id(c, v, "spanId");
    e->trace_id = drv_otlp_json_hex_id(c, v, "traceId");
    return e;
}

//  The fields every point has.
#define POINT_COMMON(c, v, pt)                                                                                         \
    do {                                                                                                               \
        (pt)->attributes = drv_otlp_json_attributes(c, v, "attributes", &(pt)->n_attributes, 0);                       \
        (pt)->start_time_unix_nano = drv_otlp_json_uint(c, v, "startTimeUnixNano", UINT64_MAX);                        \
        (pt)->time_unix_nano = drv_otlp_json_uint(c, v, "timeUnixNano", UINT64_MAX);                                   \
        (pt)->flags = (uint32_t)drv_otlp_json_uint(c, v, "flags", UINT32_MAX);                                         \
    } while (0)

#define EXEMPLARS(c, v, pt)                                                                                            \
    ((pt)->exemplars = (otlp_exemplar_t **)drv_otlp_json_list(c, v, "exemplars", &(pt)->n_exemplars, s_exemplar))

static void *s_number_point(ctx_t *c, const json_t *v)
{
    otlp_number_point_t *pt = drv_otlp_json_alloc(c, sizeof *pt);
    if (!pt) {
        return NULL;
    }
    opentelemetry__proto__metrics__v1__number_data_point__init(pt);
    POINT_COMMON(c, v, pt);
    EXEMPLARS(c, v, pt);
    if (drv_otlp_json_get(v, "asInt")) {
        pt->value_case = OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_INT;
        pt->as_int = drv_otlp_json_int64(c, drv_otlp_json_get(v, "asInt"), "asInt");
    } else if (drv_otlp_json_get(v, "asDouble")) {
        pt->value_case = OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_DOUBLE;
        pt->as_double = s_double(c, v, "asDouble");
    }
    return pt;
}

//  A histogram's optional double: its case set (to the field's number) when present.
#define OPTIONAL_DOUBLE(c, v, pt, field, name, number)                                                                 \
    do {                                                                                                               \
        if (drv_otlp_json_get(v, name) && !json_is_null(drv_otlp_json_get(v, name))) {                                 \
            (pt)->has_##field##_case = number;                                                                         \
            (pt)->field = s_double(c, v, name);                                                                        \
        }                                                                                                              \
    } while (0)

static void *s_histogram_point(ctx_t *c, const json_t *v)
{
    otlp_histogram_point_t *pt = drv_otlp_json_alloc(c, sizeof *pt);
    if (!pt) {
        return NULL;
    }
    opentelemetry__proto__metrics__v1__histogram_data_point__init(pt);
    POINT_COMMON(c, v, pt);
    EXEMPLARS(c, v, pt);
    pt->count = drv_otlp_json_uint(c, v, "count", UINT64_MAX);
    OPTIONAL_DOUBLE(c, v, pt, sum, "sum", 5);
    OPTIONAL_DOUBLE(c, v, pt, min, "min", 11);
    OPTIONAL_DOUBLE(c, v, pt, max, "max", 12);
    pt->bucket_counts = s_uints(c, v, "bucketCounts", &pt->n_bucket_counts);
    pt->explicit_bounds = s_doubles(c, v, "explicitBounds", &pt->n_explicit_bounds);
    return pt;
}

static otlp_exp_buckets_t *s_buckets(ctx_t *c, const json_t *obj, const char *field)
{
    json_t *v = drv_otlp_json_get(obj, field);
    if (!json_is_object(v)) {
        return NULL;
    }
    otlp_exp_buckets_t *b = drv_otlp_json_alloc(c, sizeof *b);
    if (!b) {
        return NULL;
    }
    opentelemetry__proto__metrics__v1__exponential_histogram_data_point__buckets__init(b);
    size_t at = drv_otlp_json_enter(c, field, -1);
    json_t *offset = drv_otlp_json_get(v, "offset");
    b->offset = offset && !json_is_null(offset) ? (int32_t)drv_otlp_json_int64(c, offset, "offset") : 0;
    b->bucket_counts = s_uints(c, v, "bucketCounts", &b->n_bucket_counts);
    drv_otlp_json_leave(c, at);
    return b;
}

static void *s_exp_histogram_point(ctx_t *c, const json_t *v)
{
    otlp_exp_histogram_point_t *pt = drv_otlp_json_alloc(c, sizeof *pt);
    if (!pt) {
        return NULL;
    }
    opentelemetry__proto__metrics__v1__exponential_histogram_data_point__init(pt);
    POINT_COMMON(c, v, pt);
    EXEMPLARS(c, v, pt);
    pt->count = drv_otlp_json_uint(c, v, "count", UINT64_MAX);
    OPTIONAL_DOUBLE(c, v, pt, sum, "sum", 5);
    OPTIONAL_DOUBLE(c, v, pt, min, "min", 12);
    OPTIONAL_DOUBLE(c, v, pt, max, "max", 13);
    json_t *scale = drv_otlp_json_get(v, "scale");
    pt->scale = scale && !json_is_null(scale) ? (int32_t)drv_otlp_json_int64(c, scale, "scale") : 0;
    pt->zero_count = drv_otlp_json_uint(c, v, "zeroCount", UINT64_MAX);
    pt->zero_threshold = s_double(c, v, "zeroThreshold");
    pt->positive = s_buckets(c, v, "positive");
    pt->negative = s_buckets(c, v, "negative");
    return pt;
}

static void *s_quantile(ctx_t *c, const json_t *v)
{
    otlp_quantile_t *q = drv_otlp_json_alloc(c, sizeof *q);
    if (!q) {
        return NULL;
    }
    opentelemetry__proto__metrics__v1__summary_data_point__value_at_quantile__init(q);
    q->quantile = s_double(c, v, "quantile");
    q->value = s_double(c, v, "value");
    return q;
}

static void *s_summary_point(ctx_t *c, const json_t *v)
{
    otlp_summary_point_t *pt = drv_otlp_json_alloc(c, sizeof *pt);
    if (!pt) {
        return NULL;
    }
    opentelemetry__proto__metrics__v1__summary_data_point__init(pt);
    POINT_COMMON(c, v, pt);
    pt->count = drv_otlp_json_uint(c, v, "count", UINT64_MAX);
    pt->sum = s_double(c, v, "sum");
    pt->quantile_values =
        (otlp_quantile_t **)drv_otlp_json_list(c, v, "quantileValues", &pt->n_quantile_values, s_quantile);
    return pt;
}

//  ---------------------------------------------------------------- metrics

//  The metric's data (one of its five kinds), built into metric.
static void s_data(ctx_t *c, const json_t *v, otlp_metric_t *metric)
{
    json_t *d;
    if ((d = drv_otlp_json_get(v, "gauge")) && json_is_object(d)) {
        Opentelemetry__Proto__Metrics__V1__Gauge *g = drv_otlp_json_alloc(c, sizeof *g);
        if (g) {
            opentelemetry__proto__metrics__v1__gauge__init(g);
            metric->gauge = g;
            metric->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE;
            size_t at = drv_otlp_json_enter(c, "gauge", -1);
            g->data_points =
                (otlp_number_point_t **)drv_otlp_json_list(c, d, "dataPoints", &g->n_data_points, s_number_point);
            drv_otlp_json_leave(c, at);
        }
    } else if ((d = drv_otlp_json_get(v, "sum")) && json_is_object(d)) {
        Opentelemetry__Proto__Metrics__V1__Sum *s = drv_otlp_json_alloc(c, sizeof *s);
        if (s) {
            opentelemetry__proto__metrics__v1__sum__init(s);
            metric->sum = s;
            metric->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM;
            size_t at = drv_otlp_json_enter(c, "sum", -1);
            s->data_points =
                (otlp_number_point_t **)drv_otlp_json_list(c, d, "dataPoints", &s->n_data_points, s_number_point);
            s->aggregation_temporality = drv_otlp_json_enum(c, d, "aggregationTemporality", s_temporalities, 3);
            json_t *mono = drv_otlp_json_get(d, "isMonotonic");
            if (mono && !json_is_null(mono) && !json_is_boolean(mono)) {
                drv_otlp_json_fail(c, "isMonotonic", "must be true or false");
            }
            s->is_monotonic = json_is_true(mono);
            drv_otlp_json_leave(c, at);
        }
    } else if ((d = drv_otlp_json_get(v, "histogram")) && json_is_object(d)) {
        Opentelemetry__Proto__Metrics__V1__Histogram *h = drv_otlp_json_alloc(c, sizeof *h);
        if (h) {
            opentelemetry__proto__metrics__v1__histogram__init(h);
            metric->histogram = h;
            metric->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_HISTOGRAM;
            size_t at = drv_otlp_json_enter(c, "histogram", -1);
            h->data_points =
                (otlp_histogram_point_t **)drv_otlp_json_list(c, d, "dataPoints", &h->n_data_points, s_histogram_point);
            h->aggregation_temporality = drv_otlp_json_enum(c, d, "aggregationTemporality", s_temporalities, 3);
            drv_otlp_json_leave(c, at);
        }
    } else if ((d = drv_otlp_json_get(v, "exponentialHistogram")) && json_is_object(d)) {
        Opentelemetry__Proto__Metrics__V1__ExponentialHistogram *h = drv_otlp_json_alloc(c, sizeof *h);
        if (h) {
            opentelemetry__proto__metrics__v1__exponential_histogram__init(h);
            metric->exponential_histogram = h;
            metric->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_EXPONENTIAL_HISTOGRAM;
            size_t at = drv_otlp_json_enter(c, "exponentialHistogram", -1);
            h->data_points = (otlp_exp_histogram_point_t **)drv_otlp_json_list(c, d, "dataPoints", &h->n_data_points,
                                                                               s_exp_histogram_point);
            h->aggregation_temporality = drv_otlp_json_enum(c, d, "aggregationTemporality", s_temporalities, 3);
            drv_otlp_json_leave(c, at);
        }
    } else if ((d = drv_otlp_json_get(v, "summary")) && json_is_object(d)) {
        Opentelemetry__Proto__Metrics__V1__Summary *s = drv_otlp_json_alloc(c, sizeof *s);
        if (s) {
            opentelemetry__proto__metrics__v1__summary__init(s);
            metric->summary = s;
            metric->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUMMARY;
            size_t at = drv_otlp_json_enter(c, "summary", -1);
            s->data_points =
                (otlp_summary_point_t **)drv_otlp_json_list(c, d, "dataPoints", &s->n_data_points, s_summary_point);
            drv_otlp_json_leave(c, at);
        }
    }
}

static void *s_metric(ctx_t *c, const json_t *v)
{
    otlp_metric_t *metric = drv_otlp_json_alloc(c, sizeof *metric);
    if (!metric) {
        return NULL;
    }
    opentelemetry__proto__metrics__v1__metric__init(metric);
    metric->name = drv_otlp_json_string(c, v, "name");
    metric->description = drv_otlp_json_string(c, v, "description");
    metric->unit = drv_otlp_json_string(c, v, "unit");
    metric->metadata = drv_otlp_json_attributes(c, v, "metadata", &metric->n_metadata, 0);
    s_data(c, v, metric);
    return metric;
}

static void *s_scope_metrics(ctx_t *c, const json_t *v)
{
    otlp_scope_metrics_t *sm = drv_otlp_json_alloc(c, sizeof *sm);
    if (!sm) {
        return NULL;
    }
    opentelemetry__proto__metrics__v1__scope_metrics__init(sm);
    sm->scope = drv_otlp_json_scope(c, v);
    sm->metrics = (otlp_metric_t **)drv_otlp_json_list(c, v, "metrics", &sm->n_metrics, s_metric);
    sm->schema_url = drv_otlp_json_string(c, v, "schemaUrl");
    return sm;
}

static void *s_resource_metrics(ctx_t *c, const json_t *v)
{
    otlp_resource_metrics_t *rm = drv_otlp_json_alloc(c, sizeof *rm);
    if (!rm) {
        return NULL;
    }
    opentelemetry__proto__metrics__v1__resource_metrics__init(rm);
    rm->resource = drv_otlp_json_resource(c, v);
    rm->scope_metrics =
        (otlp_scope_metrics_t **)drv_otlp_json_list(c, v, "scopeMetrics", &rm->n_scope_metrics, s_scope_metrics);
    rm->schema_url = drv_otlp_json_string(c, v, "schemaUrl");
    return rm;
}

int drv_otlp_json_metrics(ctx_t *c, const json_t *doc, drv_otlp_request_t *out)
{
    otlp_metrics_request_t *req = drv_otlp_json_alloc(c, sizeof *req);
    if (!req) {
        return -1;
    }
    opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__init(req);
    out->metrics = req;
    req->resource_metrics = (otlp_resource_metrics_t **)drv_otlp_json_list(
        c, doc, "resourceMetrics", &req->n_resource_metrics, s_resource_metrics);
    return 0;
}
