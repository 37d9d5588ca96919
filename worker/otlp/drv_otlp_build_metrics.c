/*  drv_otlp_build_metrics — metric records back into OTLP (the reverse of
    drv_otlp_metrics.c, docs/operations.md, OTLP): a Metric from the record of its first
    point, and each record as a point of its type. Values of another type
    than the mapping says are left at their defaults; a key the mapping does
    not name is not carried (a metric point has no free attributes). */
#include "drv_otlp_build_internal.h"
#include "drv_record.h"

#include <stdio.h>
#include <string.h>

static bool s_number(const msgpack_object *o)
{
    return o && (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER || o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ||
                 o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32);
}

static uint64_t s_u64(const msgpack_object *o)
{
    return o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? o->via.u64 : 0;
}

static int64_t s_i64(const msgpack_object *o)
{
    return !o                                           ? 0
           : o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? (int64_t)o->via.u64
           : o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ? o->via.i64
                                                        : 0;
}

static bool s_is(const msgpack_object *o, const char *text)
{
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(text) &&
           !memcmp(o->via.str.ptr, text, o->via.str.size);
}

static const msgpack_object *s_list(const msgpack_object *record, const char *key)
{
    const msgpack_object *o = drv_otlp_get_n(record, key, strlen(key));
    return o && o->type == MSGPACK_OBJECT_ARRAY ? o : NULL;
}

static uint64_t *s_uints(build_t *b, const msgpack_object *list, size_t *n)
{
    *n = list ? list->via.array.size : 0;
    uint64_t *out = *n ? msgpack_zone_malloc(b->zone, *n * sizeof *out) : NULL;
    for (size_t i = 0; out && i < *n; i++) {
        out[i] = s_u64(&list->via.array.ptr[i]);
    }
    return *n && !out ? NULL : out;
}

static double *s_doubles(build_t *b, const msgpack_object *list, size_t *n)
{
    *n = list ? list->via.array.size : 0;
    double *out = *n ? msgpack_zone_malloc(b->zone, *n * sizeof *out) : NULL;
    for (size_t i = 0; out && i < *n; i++) {
        out[i] = drv_record_number(&list->via.array.ptr[i]);
    }
    return out;
}

static int s_attributes(build_t *b, const msgpack_object *record, const char *key, otlp_kv_t ***out, size_t *n)
{
    return drv_otlp_attributes(b, drv_otlp_get_n(record, key, strlen(key)), NULL, 0, out, n);
}

static int s_exemplars(build_t *b, const msgpack_object *record, otlp_exemplar_t ***out, size_t *n)
{
    const msgpack_object *list = s_list(record, "exemplars");
    *n = 0;
    *out = drv_otlp_array(b, list ? list->via.array.size : 0);
    if (!*out) {
        return -1;
    }
    for (uint32_t i = 0; list && i < list->via.array.size; i++) {
        const msgpack_object *x = &list->via.array.ptr[i];
        if (x->type != MSGPACK_OBJECT_MAP) {
            continue;
        }
        otlp_exemplar_t *e = drv_otlp_new(b, &opentelemetry__proto__metrics__v1__exemplar__descriptor);
        if (!e || s_attributes(b, x, "filtered_attributes", &e->filtered_attributes, &e->n_filtered_attributes)) {
            return -1;
        }
        e->time_unix_nano = s_u64(drv_otlp_get(x, "time_unix_nano"));
        const msgpack_object *value = drv_otlp_get(x, "value");
        if (value && (value->type == MSGPACK_OBJECT_FLOAT64 || value->type == MSGPACK_OBJECT_FLOAT32)) {
            e->value_case = OPENTELEMETRY__PROTO__METRICS__V1__EXEMPLAR__VALUE_AS_DOUBLE;
            e->as_double = value->via.f64;
        } else if (s_number(value)) {
            e->value_case = OPENTELEMETRY__PROTO__METRICS__V1__EXEMPLAR__VALUE_AS_INT;
            e->as_int = s_i64(value);
        }
        e->span_id = drv_otlp_id(b, drv_otlp_get(x, "span_id"));
        e->trace_id = drv_otlp_id(b, drv_otlp_get(x, "trace_id"));
        (*out)[(*n)++] = e;
    }
    return 0;
}

//  The fields every point has.
#define POINT_COMMON(b, record, pt)                                                                                    \
    ((pt)->start_time_unix_nano = s_u64(drv_otlp_get(record, "start_time_unix_nano")),                                 \
     (pt)->time_unix_nano = s_u64(drv_otlp_get(record, "time_unix_nano")),                                             \
     (pt)->flags = (uint32_t)s_u64(drv_otlp_get(record, "flags")),                                                     \
     s_attributes(b, record, "attributes", &(pt)->attributes, &(pt)->n_attributes))

//  A histogram's optional double, set (its case the field's number) when the record has it.
#define OPTIONAL(record, pt, field, number)                                                                            \
    do {                                                                                                               \
        const msgpack_object *v_ = drv_otlp_get(record, #field);                                                       \
        if (s_number(v_)) {                                                                                            \
            (pt)->has_##field##_case = number;                                                                         \
            (pt)->field = drv_record_number(v_);                                                                       \
        }                                                                                                              \
    } while (0)

static otlp_exp_buckets_t *s_buckets(build_t *b, const msgpack_object *record, const char *key)
{
    const msgpack_object *map = drv_otlp_get_n(record, key, strlen(key));
    otlp_exp_buckets_t *buckets =
        drv_otlp_new(b, &opentelemetry__proto__metrics__v1__exponential_histogram_data_point__buckets__descriptor);
    if (!buckets) {
        return NULL;
    }
    buckets->offset = (int32_t)s_i64(drv_otlp_get(map, "offset"));
    const msgpack_object *counts = s_list(map, "bucket_counts");
    buckets->bucket_counts = s_uints(b, counts, &buckets->n_bucket_counts);
    return counts && counts->via.array.size && !buckets->bucket_counts ? NULL : buckets;
}

drv_otlp_metric_kind_t drv_otlp_metric_kind(const msgpack_object *record)
{
    const msgpack_object *type = drv_otlp_get(record, "type");
    static const char *const names[] = {"gauge", "sum", "histogram", "exponential_histogram", "summary"};
    for (int i = 0; i < 5; i++) {
        if (s_is(type, names[i])) {
            return (drv_otlp_metric_kind_t)(i + 1);
        }
    }
    return DRV_METRIC_NONE;
}

bool drv_otlp_metric_type_known(const msgpack_object *record)
{
    return drv_otlp_metric_kind(record) != DRV_METRIC_NONE;
}

int drv_otlp_signal_of(const msgpack_object *record, char *why, size_t whylen)
{
    const msgpack_object *signal = drv_otlp_get(record, "signal");
    if (!signal || signal->type != MSGPACK_OBJECT_STR || s_is(signal, "log")) {
        return DRV_OTLP_LOGS;
    }
    if (s_is(signal, "span")) {
        return DRV_OTLP_TRACES;
    }
    if (s_is(signal, "metric") && drv_otlp_metric_type_known(record)) {
        return DRV_OTLP_METRICS;
    }
    snprintf(why, whylen, "signal '%.*s' has no OTLP form here (log, span, or metric of a known type)",
             (int)(signal->via.str.size > 64 ? 64 : signal->via.str.size), signal->via.str.ptr);
    return -1;
}

otlp_metric_t *drv_otlp_build_metric(build_t *b, const msgpack_object *record, size_t points)
{
    otlp_metric_t *metric = drv_otlp_new(b, &opentelemetry__proto__metrics__v1__metric__descriptor);
    if (!metric || s_attributes(b, record, "metadata", &metric->metadata, &metric->n_metadata)) {
        return NULL;
    }
    metric->name = drv_otlp_string_of(b, drv_otlp_get(record, "name"));
    metric->description = drv_otlp_string_of(b, drv_otlp_get(record, "description"));
    metric->unit = drv_otlp_string_of(b, drv_otlp_get(record, "unit"));
    int temporality = (int)s_u64(drv_otlp_get(record, "aggregation_temporality"));
    void **array = drv_otlp_array(b, points);
    if (!array) {
        return NULL;
    }
    switch (drv_otlp_metric_kind(record)) {
    case DRV_METRIC_GAUGE:
        metric->gauge = drv_otlp_new(b, &opentelemetry__proto__metrics__v1__gauge__descriptor);
        metric->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE;
        if (metric->gauge) {
            metric->gauge->data_points = (otlp_number_point_t **)array;
        }
        return metric->gauge ? metric : NULL;
    case DRV_METRIC_SUM:
        metric->sum = drv_otlp_new(b, &opentelemetry__proto__metrics__v1__sum__descriptor);
        metric->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM;
        if (metric->sum) {
            metric->sum->data_points = (otlp_number_point_t **)array;
            metric->sum->aggregation_temporality = temporality;
            const msgpack_object *mono = drv_otlp_get(record, "is_monotonic");
            metric->sum->is_monotonic = mono && mono->type == MSGPACK_OBJECT_BOOLEAN && mono->via.boolean;
        }
        return metric->sum ? metric : NULL;
    case DRV_METRIC_HISTOGRAM:
        metric->histogram = drv_otlp_new(b, &opentelemetry__proto__metrics__v1__histogram__descriptor);
        metric->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_HISTOGRAM;
        if (metric->histogram) {
            metric->histogram->data_points = (otlp_histogram_point_t **)array;
            metric->histogram->aggregation_temporality = temporality;
        }
        return metric->histogram ? metric : NULL;
    case DRV_METRIC_EXPONENTIAL_HISTOGRAM:
        metric->exponential_histogram =
            drv_otlp_new(b, &opentelemetry__proto__metrics__v1__exponential_histogram__descriptor);
        metric->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_EXPONENTIAL_HISTOGRAM;
        if (metric->exponential_histogram) {
            metric->exponential_histogram->data_points = (otlp_exp_histogram_point_t **)array;
            metric->exponential_histogram->aggregation_temporality = temporality;
        }
        return metric->exponential_histogram ? metric : NULL;
    case DRV_METRIC_SUMMARY:
        metric->summary = drv_otlp_new(b, &opentelemetry__proto__metrics__v1__summary__descriptor);
        metric->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUMMARY;
        if (metric->summary) {
            metric->summary->data_points = (otlp_summary_point_t **)array;
        }
        return metric->summary ? metric : NULL;
    default:
        return metric; // no data: cannot happen, records without a type are not grouped as metrics
    }
}

int drv_otlp_build_point(build_t *b, otlp_metric_t *metric, const msgpack_object *record)
{
    switch (metric->data_case) {
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE:
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM: {
        otlp_number_point_t *pt = drv_otlp_new(b, &opentelemetry__proto__metrics__v1__number_data_point__descriptor);
        if (!pt || POINT_COMMON(b, record, pt) || s_exemplars(b, record, &pt->exemplars, &pt->n_exemplars)) {
            return -1;
        }
        const msgpack_object *value = drv_otlp_get(record, "value");
        if (value && (value->type == MSGPACK_OBJECT_FLOAT64 || value->type == MSGPACK_OBJECT_FLOAT32)) {
            pt->value_case = OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_DOUBLE;
            pt->as_double = value->via.f64;
        } else if (s_number(value)) {
            pt->value_case = OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_INT;
            pt->as_int = s_i64(value);
        }
        if (metric->data_case == OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE) {
            metric->gauge->data_points[metric->gauge->n_data_points++] = pt;
        } else {
            metric->sum->data_points[metric->sum->n_data_points++] = pt;
        }
        return 0;
    }
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_HISTOGRAM: {
        otlp_histogram_point_t *pt =
            drv_otlp_new(b, &opentelemetry__proto__metrics__v1__histogram_data_point__descriptor);
        if (!pt || POINT_COMMON(b, record, pt) || s_exemplars(b, record, &pt->exemplars, &pt->n_exemplars)) {
            return -1;
        }
        pt->count = s_u64(drv_otlp_get(record, "count"));
        OPTIONAL(record, pt, sum, 5);
        OPTIONAL(record, pt, min, 11);
        OPTIONAL(record, pt, max, 12);
        pt->bucket_counts = s_uints(b, s_list(record, "bucket_counts"), &pt->n_bucket_counts);
        pt->explicit_bounds = s_doubles(b, s_list(record, "explicit_bounds"), &pt->n_explicit_bounds);
        if ((pt->n_bucket_counts && !pt->bucket_counts) || (pt->n_explicit_bounds && !pt->explicit_bounds)) {
            return -1;
        }
        metric->histogram->data_points[metric->histogram->n_data_points++] = pt;
        return 0;
    }
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_EXPONENTIAL_HISTOGRAM: {
        otlp_exp_histogram_point_t *pt =
            drv_otlp_new(b, &opentelemetry__proto__metrics__v1__exponential_histogram_data_point__descriptor);
        if (!pt || POINT_COMMON(b, record, pt) || s_exemplars(b, record, &pt->exemplars, &pt->n_exemplars)) {
            return -1;
        }
        pt->count = s_u64(drv_otlp_get(record, "count"));
        OPTIONAL(record, pt, sum, 5);
        OPTIONAL(record, pt, min, 12);
        OPTIONAL(record, pt, max, 13);
        pt->scale = (int32_t)s_i64(drv_otlp_get(record, "scale"));
        pt->zero_count = s_u64(drv_otlp_get(record, "zero_count"));
        pt->zero_threshold = drv_record_number(drv_otlp_get(record, "zero_threshold"));
        if (!(pt->positive = s_buckets(b, record, "positive")) || !(pt->negative = s_buckets(b, record, "negative"))) {
            return -1;
        }
        metric->exponential_histogram->data_points[metric->exponential_histogram->n_data_points++] = pt;
        return 0;
    }
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUMMARY: {
        otlp_summary_point_t *pt = drv_otlp_new(b, &opentelemetry__proto__metrics__v1__summary_data_point__descriptor);
        if (!pt || POINT_COMMON(b, record, pt)) {
            return -1;
        }
        pt->count = s_u64(drv_otlp_get(record, "count"));
        pt->sum = drv_record_number(drv_otlp_get(record, "sum"));
        const msgpack_object *list = s_list(record, "quantile_values");
        pt->quantile_values = drv_otlp_array(b, list ? list->via.array.size : 0);
        if (!pt->quantile_values) {
            return -1;
        }
        for (uint32_t i = 0; list && i < list->via.array.size; i++) {
            const msgpack_object *q = &list->via.array.ptr[i];
            otlp_quantile_t *one =
                drv_otlp_new(b, &opentelemetry__proto__metrics__v1__summary_data_point__value_at_quantile__descriptor);
            if (!one) {
                return -1;
            }
            one->quantile = drv_record_number(drv_otlp_get(q, "quantile"));
            one->value = drv_record_number(drv_otlp_get(q, "value"));
            pt->quantile_values[pt->n_quantile_values++] = one;
        }
        metric->summary->data_points[metric->summary->n_data_points++] = pt;
        return 0;
    }
    default:
        return 0;
    }
}
