/*  drv_otlp_json_write_metrics — a metrics request's ResourceMetrics as
    OTLP/JSON (drv_otlp_json_write.c's rules: 64-bit integers as decimal
    strings, ids in hex, zero fields left out). A oneof's member (a value,
    an optional sum, min or max) is written whenever it is set, zero or not;
    doubles JSON cannot hold are written as "NaN", "Infinity", "-Infinity". */
#include "drv_otlp_json_internal.h"

#include <math.h>
#include <stdio.h>

static json_t *s_double(double v)
{
    if (isnan(v)) {
        return json_string("NaN");
    }
    if (isinf(v)) {
        return json_string(v > 0 ? "Infinity" : "-Infinity");
    }
    return json_real(v);
}

static void s_nonzero_double(json_t *object, const char *key, double v)
{
    if (v != 0) {
        drv_otlp_jw_set(object, key, s_double(v));
    }
}

static json_t *s_int_string(int64_t v)
{
    char text[24];
    snprintf(text, sizeof text, "%lld", (long long)v);
    return json_string(text);
}

static json_t *s_uints(const uint64_t *v, size_t n)
{
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++) {
        char text[24];
        snprintf(text, sizeof text, "%llu", (unsigned long long)v[i]);
        json_array_append_new(out, json_string(text));
    }
    return out;
}

static json_t *s_exemplars(otlp_exemplar_t *const *ex, size_t n)
{
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_object();
        drv_otlp_jw_attributes_of(e, ex[i]->filtered_attributes, ex[i]->n_filtered_attributes);
        if (json_object_get(e, "attributes")) { // written under the point's name for them
            drv_otlp_jw_set(e, "filteredAttributes", json_incref(json_object_get(e, "attributes")));
            json_object_del(e, "attributes");
        }
        drv_otlp_jw_u64(e, "timeUnixNano", ex[i]->time_unix_nano);
        if (ex[i]->value_case == OPENTELEMETRY__PROTO__METRICS__V1__EXEMPLAR__VALUE_AS_INT) {
            drv_otlp_jw_set(e, "asInt", s_int_string(ex[i]->as_int));
        } else if (ex[i]->value_case == OPENTELEMETRY__PROTO__METRICS__V1__EXEMPLAR__VALUE_AS_DOUBLE) {
            drv_otlp_jw_set(e, "asDouble", s_double(ex[i]->as_double));
        }
        drv_otlp_jw_id(e, "spanId", ex[i]->span_id);
        drv_otlp_jw_id(e, "traceId", ex[i]->trace_id);
        json_array_append_new(out, e);
    }
    return out;
}

//  The fields every point has.
#define POINT_COMMON(out, pt)                                                                                          \
    do {                                                                                                               \
        drv_otlp_jw_attributes_of(out, (pt)->attributes, (pt)->n_attributes);                                          \
        drv_otlp_jw_u64(out, "startTimeUnixNano", (pt)->start_time_unix_nano);                                         \
        drv_otlp_jw_u64(out, "timeUnixNano", (pt)->time_unix_nano);                                                    \
        drv_otlp_jw_int(out, "flags", (pt)->flags);                                                                    \
    } while (0)

//  A histogram's count and optional sum, min and max (set: their case is not NOT_SET, 0).
#define STATS(out, pt)                                                                                                 \
    do {                                                                                                               \
        drv_otlp_jw_u64(out, "count", (pt)->count);                                                                    \
        if ((pt)->has_sum_case) {                                                                                      \
            drv_otlp_jw_set(out, "sum", s_double((pt)->sum));                                                          \
        }                                                                                                              \
        if ((pt)->has_min_case) {                                                                                      \
            drv_otlp_jw_set(out, "min", s_double((pt)->min));                                                          \
        }                                                                                                              \
        if ((pt)->has_max_case) {                                                                                      \
            drv_otlp_jw_set(out, "max", s_double((pt)->max));                                                          \
        }                                                                                                              \
    } while (0)

static json_t *s_number_points(otlp_number_point_t *const *points, size_t n)
{
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++) {
        const otlp_number_point_t *pt = points[i];
        json_t *p = json_object();
        POINT_COMMON(p, pt);
        if (pt->value_case == OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_INT) {
            drv_otlp_jw_set(p, "asInt", s_int_string(pt->as_int));
        } else if (pt->value_case == OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_DOUBLE) {
            drv_otlp_jw_set(p, "asDouble", s_double(pt->as_double));
        }
        drv_otlp_jw_set(p, "exemplars", s_exemplars(pt->exemplars, pt->n_exemplars));
        json_array_append_new(out, p);
    }
    return out;
}

static json_t *s_histogram_points(otlp_histogram_point_t *const *points, size_t n)
{
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++) {
        const otlp_histogram_point_t *pt = points[i];
        json_t *p = json_object();
        POINT_COMMON(p, pt);
        STATS(p, pt);
        drv_otlp_jw_set(p, "bucketCounts", s_uints(pt->bucket_counts, pt->n_bucket_counts));
        json_t *bounds = json_array();
        for (size_t k = 0; k < pt->n_explicit_bounds; k++) {
            json_array_append_new(bounds, s_double(pt->explicit_bounds[k]));
        }
        drv_otlp_jw_set(p, "explicitBounds", bounds);
        drv_otlp_jw_set(p, "exemplars", s_exemplars(pt->exemplars, pt->n_exemplars));
        json_array_append_new(out, p);
    }
    return out;
}

static json_t *s_buckets(const otlp_exp_buckets_t *b)
{
    json_t *out = json_object();
    if (b) {
        drv_otlp_jw_int(out, "offset", b->offset);
        drv_otlp_jw_set(out, "bucketCounts", s_uints(b->bucket_counts, b->n_bucket_counts));
    }
    return out;
}

static json_t *s_exp_histogram_points(otlp_exp_histogram_point_t *const *points, size_t n)
{
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++) {
        const otlp_exp_histogram_point_t *pt = points[i];
        json_t *p = json_object();
        POINT_COMMON(p, pt);
        STATS(p, pt);
        drv_otlp_jw_int(p, "scale", pt->scale);
        drv_otlp_jw_u64(p, "zeroCount", pt->zero_count);
        s_nonzero_double(p, "zeroThreshold", pt->zero_threshold);
        drv_otlp_jw_set(p, "positive", s_buckets(pt->positive));
        drv_otlp_jw_set(p, "negative", s_buckets(pt->negative));
        drv_otlp_jw_set(p, "exemplars", s_exemplars(pt->exemplars, pt->n_exemplars));
        json_array_append_new(out, p);
    }
    return out;
}

static json_t *s_summary_points(otlp_summary_point_t *const *points, size_t n)
{
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++) {
        const otlp_summary_point_t *pt = points[i];
        json_t *p = json_object();
        POINT_COMMON(p, pt);
        drv_otlp_jw_u64(p, "count", pt->count);
        s_nonzero_double(p, "sum", pt->sum);
        json_t *quantiles = json_array();
        for (size_t k = 0; k < pt->n_quantile_values; k++) {
            json_t *q = json_object();
            s_nonzero_double(q, "quantile", pt->quantile_values[k]->quantile);
            s_nonzero_double(q, "value", pt->quantile_values[k]->value);
            json_array_append_new(quantiles, q);
        }
        drv_otlp_jw_set(p, "quantileValues", quantiles);
        json_array_append_new(out, p);
    }
    return out;
}

static json_t *s_metric(const otlp_metric_t *m)
{
    json_t *out = json_object();
    drv_otlp_jw_string(out, "name", m->name);
    drv_otlp_jw_string(out, "description", m->description);
    drv_otlp_jw_string(out, "unit", m->unit);
    drv_otlp_jw_attributes_of(out, m->metadata, m->n_metadata);
    if (json_object_get(out, "attributes")) { // the metric's are its metadata
        drv_otlp_jw_set(out, "metadata", json_incref(json_object_get(out, "attributes")));
        json_object_del(out, "attributes");
    }
    json_t *data = json_object();
    switch (m->data_case) {
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE:
        drv_otlp_jw_set(data, "dataPoints", s_number_points(m->gauge->data_points, m->gauge->n_data_points));
        drv_otlp_jw_set(out, "gauge", data);
        break;
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM:
        drv_otlp_jw_set(data, "dataPoints", s_number_points(m->sum->data_points, m->sum->n_data_points));
        drv_otlp_jw_int(data, "aggregationTemporality", m->sum->aggregation_temporality);
        if (m->sum->is_monotonic) {
            drv_otlp_jw_set(data, "isMonotonic", json_true());
        }
        drv_otlp_jw_set(out, "sum", data);
        break;
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_HISTOGRAM:
        drv_otlp_jw_set(data, "dataPoints", s_histogram_points(m->histogram->data_points, m->histogram->n_data_points));
        drv_otlp_jw_int(data, "aggregationTemporality", m->histogram->aggregation_temporality);
        drv_otlp_jw_set(out, "histogram", data);
        break;
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_EXPONENTIAL_HISTOGRAM:
        drv_otlp_jw_set(
            data, "dataPoints",
            s_exp_histogram_points(m->exponential_histogram->data_points, m->exponential_histogram->n_data_points));
        drv_otlp_jw_int(data, "aggregationTemporality", m->exponential_histogram->aggregation_temporality);
        drv_otlp_jw_set(out, "exponentialHistogram", data);
        break;
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUMMARY:
        drv_otlp_jw_set(data, "dataPoints", s_summary_points(m->summary->data_points, m->summary->n_data_points));
        drv_otlp_jw_set(out, "summary", data);
        break;
    default:
        json_decref(data);
        break;
    }
    return out;
}

void drv_otlp_jw_metrics(const otlp_metrics_request_t *request, json_t *resources)
{
    for (size_t r = 0; r < request->n_resource_metrics; r++) {
        const otlp_resource_metrics_t *rm = request->resource_metrics[r];
        json_t *resource = drv_otlp_jw_resource(rm->resource, rm->schema_url), *scopes = json_array();
        for (size_t s = 0; s < rm->n_scope_metrics; s++) {
            const otlp_scope_metrics_t *sm = rm->scope_metrics[s];
            json_t *scope = drv_otlp_jw_scope(sm->scope), *metrics = json_array();
            for (size_t i = 0; i < sm->n_metrics; i++) {
                json_array_append_new(metrics, s_metric(sm->metrics[i]));
            }
            drv_otlp_jw_set(scope, "metrics", metrics);
            drv_otlp_jw_string(scope, "schemaUrl", sm->schema_url);
            json_array_append_new(scopes, scope);
        }
        drv_otlp_jw_set(resource, "scopeMetrics", scopes);
        json_array_append_new(resources, resource);
    }
}
