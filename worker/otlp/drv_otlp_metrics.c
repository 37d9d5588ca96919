/*  drv_otlp_metrics — an OTLP metrics request as records, by the
    mapping in docs/operations.md (OTLP): one record per data point, carrying its metric's name,
    description, unit, type, temporality and metadata, and its resource and
    scope. A value that is absent (a histogram's optional sum, min and max)
    has no key in the record, so that a record made back into OTLP is the
    point that came in. */
#include "drv_otlp_records_internal.h"

#define F64(v) ((msgpack_object){.type = MSGPACK_OBJECT_FLOAT64, .via.f64 = (v)})

//  What every data point of a metric carries besides the context.
typedef struct {
    const otlp_metric_t *metric;
    const char *type;
    int temporality; // -1: the type has none
    int monotonic;   // -1: not a sum
    msgpack_object metadata;
} metric_t;

#define METRIC_PAIRS 5 // signal, name, description, unit, type (then temporality, monotonic, metadata as they apply)

//  The pairs every point of the metric has; returns how many were set.
static size_t s_metric_pairs(const metric_t *m, msgpack_object_kv *p)
{
    size_t n = 0;
    p[n++] = (msgpack_object_kv){STR("signal"), STR("metric")};
    p[n++] = (msgpack_object_kv){STR("name"), drv_otlp_obj_str(m->metric->name)};
    p[n++] = (msgpack_object_kv){STR("description"), drv_otlp_obj_str(m->metric->description)};
    p[n++] = (msgpack_object_kv){STR("unit"), drv_otlp_obj_str(m->metric->unit)};
    p[n++] = (msgpack_object_kv){STR("type"), drv_otlp_obj_str(m->type)};
    if (m->temporality >= 0) {
        p[n++] = (msgpack_object_kv){STR("aggregation_temporality"), drv_otlp_obj_int(m->temporality)};
    }
    if (m->monotonic >= 0) {
        p[n++] = (msgpack_object_kv){STR("is_monotonic"),
                                     (msgpack_object){.type = MSGPACK_OBJECT_BOOLEAN, .via.boolean = m->monotonic}};
    }
    p[n++] = (msgpack_object_kv){STR("metadata"), m->metadata};
    return n;
}

static msgpack_object s_exemplars(drv_otlp_objects_t *b, otlp_exemplar_t *const *ex, size_t n)
{
    msgpack_object *items = drv_otlp_obj_take(b, n * sizeof *items);
    for (size_t i = 0; items && i < n; i++) {
        const otlp_exemplar_t *e = ex[i];
        msgpack_object_kv *p = drv_otlp_obj_take(b, 5 * sizeof *p);
        if (p) {
            bool is_int = e->value_case == OPENTELEMETRY__PROTO__METRICS__V1__EXEMPLAR__VALUE_AS_INT;
            p[0] = (msgpack_object_kv){STR("time_unix_nano"), drv_otlp_obj_uint(e->time_unix_nano)};
            p[1] = (msgpack_object_kv){STR("value"), is_int ? drv_otlp_obj_int(e->as_int) : F64(e->as_double)};
            p[2] = (msgpack_object_kv){STR("span_id"), drv_otlp_obj_hex(b, e->span_id)};
            p[3] = (msgpack_object_kv){STR("trace_id"), drv_otlp_obj_hex(b, e->trace_id)};
            p[4] = (msgpack_object_kv){STR("filtered_attributes"),
                                       drv_otlp_obj_attributes(b, e->filtered_attributes, e->n_filtered_attributes, 4)};
        }
        items[i] = drv_otlp_obj_map(p, 5);
    }
    return drv_otlp_obj_array(items, n);
}

static msgpack_object s_uints(drv_otlp_objects_t *b, const uint64_t *v, size_t n)
{
    msgpack_object *items = drv_otlp_obj_take(b, n * sizeof *items);
    for (size_t i = 0; items && i < n; i++) {
        items[i] = drv_otlp_obj_uint(v[i]);
    }
    return drv_otlp_obj_array(items, n);
}

static msgpack_object s_doubles(drv_otlp_objects_t *b, const double *v, size_t n)
{
    msgpack_object *items = drv_otlp_obj_take(b, n * sizeof *items);
    for (size_t i = 0; items && i < n; i++) {
        items[i] = F64(v[i]);
    }
    return drv_otlp_obj_array(items, n);
}

static msgpack_object s_buckets(drv_otlp_objects_t *b, const otlp_exp_buckets_t *buckets)
{
    msgpack_object_kv *p = drv_otlp_obj_take(b, 2 * sizeof *p);
    if (p) {
        p[0] = (msgpack_object_kv){STR("offset"), drv_otlp_obj_int(buckets ? buckets->offset : 0)};
        p[1] = (msgpack_object_kv){STR("bucket_counts"), s_uints(b, buckets ? buckets->bucket_counts : NULL,
                                                                 buckets ? buckets->n_bucket_counts : 0)};
    }
    return drv_otlp_obj_map(p, 2);
}

#define MAX_PAIRS 24 // the most any point has, context included

//  A point's pairs (MAX_PAIRS of room), the metric's and those every point
//  has (times, attributes, flags, exemplars) set: *n of them. NULL when out
//  of memory (the whole request is refused).
static msgpack_object_kv *s_start(drv_otlp_objects_t *b, const metric_t *m, size_t *n, uint64_t start, uint64_t time,
                                  otlp_kv_t *const *attributes, size_t n_attributes, uint32_t flags,
                                  otlp_exemplar_t *const *exemplars, size_t n_exemplars)
{
    msgpack_object_kv *p = drv_otlp_obj_take(b, MAX_PAIRS * sizeof *p);
    if (!p) {
        return NULL;
    }
    size_t k = s_metric_pairs(m, p);
    p[k++] = (msgpack_object_kv){STR("start_time_unix_nano"), drv_otlp_obj_uint(start)};
    p[k++] = (msgpack_object_kv){STR("time_unix_nano"), drv_otlp_obj_uint(time)};
    p[k++] = (msgpack_object_kv){STR("attributes"), drv_otlp_obj_attributes(b, attributes, n_attributes, 2)};
    p[k++] = (msgpack_object_kv){STR("flags"), drv_otlp_obj_uint(flags)};
    p[k++] = (msgpack_object_kv){STR("exemplars"), s_exemplars(b, exemplars, n_exemplars)};
    *n = k;
    return p;
}

//  A histogram's count, and its sum, min and max when it has them (absent: no key).
static size_t s_stats(msgpack_object_kv *p, size_t n, uint64_t count, bool has_sum, double sum, bool has_min,
                      double min, bool has_max, double max)
{
    p[n++] = (msgpack_object_kv){STR("count"), drv_otlp_obj_uint(count)};
    if (has_sum) {
        p[n++] = (msgpack_object_kv){STR("sum"), F64(sum)};
    }
    if (has_min) {
        p[n++] = (msgpack_object_kv){STR("min"), F64(min)};
    }
    if (has_max) {
        p[n++] = (msgpack_object_kv){STR("max"), F64(max)};
    }
    return n;
}

#define NIL ((msgpack_object){.type = MSGPACK_OBJECT_NIL})

//  Every point type has these fields (a summary no exemplars: given as none).
#define START(b, m, n, pt, exemplars, n_exemplars)                                                                     \
    s_start(b, m, n, (pt)->start_time_unix_nano, (pt)->time_unix_nano, (pt)->attributes, (pt)->n_attributes,           \
            (pt)->flags, exemplars, n_exemplars)
//  Both histograms' optional fields are one-field oneofs: set is any case but NOT_SET (0).
#define STATS(p, n, pt)                                                                                                \
    s_stats(p, n, (pt)->count, (pt)->has_sum_case != 0, (pt)->sum, (pt)->has_min_case != 0, (pt)->min,                 \
            (pt)->has_max_case != 0, (pt)->max)

static msgpack_object s_number(drv_otlp_objects_t *b, const metric_t *m, const otlp_number_point_t *pt,
                               const msgpack_object_kv *context)
{
    size_t n;
    msgpack_object_kv *p = START(b, m, &n, pt, pt->exemplars, pt->n_exemplars);
    if (!p) {
        return NIL;
    }
    bool is_int = pt->value_case == OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_INT;
    p[n++] = (msgpack_object_kv){STR("value"), is_int ? drv_otlp_obj_int(pt->as_int) : F64(pt->as_double)};
    return drv_otlp_obj_record(p, n, context);
}

static msgpack_object s_histogram(drv_otlp_objects_t *b, const metric_t *m, const otlp_histogram_point_t *pt,
                                  const msgpack_object_kv *context)
{
    size_t n;
    msgpack_object_kv *p = START(b, m, &n, pt, pt->exemplars, pt->n_exemplars);
    if (!p) {
        return NIL;
    }
    n = STATS(p, n, pt);
    p[n++] = (msgpack_object_kv){STR("bucket_counts"), s_uints(b, pt->bucket_counts, pt->n_bucket_counts)};
    p[n++] = (msgpack_object_kv){STR("explicit_bounds"), s_doubles(b, pt->explicit_bounds, pt->n_explicit_bounds)};
    return drv_otlp_obj_record(p, n, context);
}

static msgpack_object s_exp_histogram(drv_otlp_objects_t *b, const metric_t *m, const otlp_exp_histogram_point_t *pt,
                                      const msgpack_object_kv *context)
{
    size_t n;
    msgpack_object_kv *p = START(b, m, &n, pt, pt->exemplars, pt->n_exemplars);
    if (!p) {
        return NIL;
    }
    n = STATS(p, n, pt);
    p[n++] = (msgpack_object_kv){STR("scale"), drv_otlp_obj_int(pt->scale)};
    p[n++] = (msgpack_object_kv){STR("zero_count"), drv_otlp_obj_uint(pt->zero_count)};
    p[n++] = (msgpack_object_kv){STR("zero_threshold"), F64(pt->zero_threshold)};
    p[n++] = (msgpack_object_kv){STR("positive"), s_buckets(b, pt->positive)};
    p[n++] = (msgpack_object_kv){STR("negative"), s_buckets(b, pt->negative)};
    return drv_otlp_obj_record(p, n, context);
}

static msgpack_object s_summary(drv_otlp_objects_t *b, const metric_t *m, const otlp_summary_point_t *pt,
                                const msgpack_object_kv *context)
{
    size_t n;
    msgpack_object_kv *p = START(b, m, &n, pt, NULL, 0);
    msgpack_object *quantiles = drv_otlp_obj_take(b, pt->n_quantile_values * sizeof *quantiles);
    if (!p) {
        return NIL;
    }
    for (size_t i = 0; quantiles && i < pt->n_quantile_values; i++) {
        msgpack_object_kv *q = drv_otlp_obj_take(b, 2 * sizeof *q);
        if (q) {
            q[0] = (msgpack_object_kv){STR("quantile"), F64(pt->quantile_values[i]->quantile)};
            q[1] = (msgpack_object_kv){STR("value"), F64(pt->quantile_values[i]->value)};
        }
        quantiles[i] = drv_otlp_obj_map(q, 2);
    }
    p[n++] = (msgpack_object_kv){STR("count"), drv_otlp_obj_uint(pt->count)};
    p[n++] = (msgpack_object_kv){STR("sum"), F64(pt->sum)};
    p[n++] = (msgpack_object_kv){STR("quantile_values"), drv_otlp_obj_array(quantiles, pt->n_quantile_values)};
    return drv_otlp_obj_record(p, n, context);
}

//  ---------------------------------------------------------------- the walk

static bool s_exemplars_unique(otlp_exemplar_t *const *ex, size_t n, const char **dup)
{
    for (size_t i = 0; i < n; i++) {
        if (!drv_otlp_obj_unique(ex[i]->filtered_attributes, ex[i]->n_filtered_attributes, dup)) {
            return false;
        }
    }
    return true;
}

//  A point's keys are unique (its attributes and its exemplars'): else it is rejected.
#define POINT_UNIQUE(pt, dup)                                                                                          \
    (drv_otlp_obj_unique((pt)->attributes, (pt)->n_attributes, dup) &&                                                 \
     s_exemplars_unique((pt)->exemplars, (pt)->n_exemplars, dup))

//  A summary point's keys: it has no exemplars.
#define ATTRIBUTES_UNIQUE(pt, dup) drv_otlp_obj_unique((pt)->attributes, (pt)->n_attributes, dup)

//  Each point of data (a Gauge, a Sum, ...) with unique keys becomes a
//  record (build); one without is rejected.
#define TAKE_POINTS(w, m, context, data, UNIQUE, build)                                                                \
    for (size_t i_ = 0; i_ < (data)->n_data_points; i_++) {                                                            \
        const char *dup_ = NULL;                                                                                       \
        if (!UNIQUE((data)->data_points[i_], &dup_)) {                                                                 \
            drv_otlp_obj_reject(w, 1, "a data point", dup_);                                                           \
        } else {                                                                                                       \
            (w)->records[(w)->count++] = build(&(w)->b, m, (data)->data_points[i_], context);                          \
        }                                                                                                              \
    }

static size_t s_points(const otlp_metric_t *metric)
{
    switch (metric->data_case) {
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE:
        return metric->gauge ? metric->gauge->n_data_points : 0;
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM:
        return metric->sum ? metric->sum->n_data_points : 0;
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_HISTOGRAM:
        return metric->histogram ? metric->histogram->n_data_points : 0;
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_EXPONENTIAL_HISTOGRAM:
        return metric->exponential_histogram ? metric->exponential_histogram->n_data_points : 0;
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUMMARY:
        return metric->summary ? metric->summary->n_data_points : 0;
    default:
        return 0; // a metric without data has no point to record
    }
}

size_t drv_otlp_metrics_count(const otlp_metrics_request_t *req)
{
    size_t count = 0;
    for (size_t r = 0; r < req->n_resource_metrics; r++) {
        for (size_t s = 0; s < req->resource_metrics[r]->n_scope_metrics; s++) {
            const otlp_scope_metrics_t *sm = req->resource_metrics[r]->scope_metrics[s];
            for (size_t i = 0; i < sm->n_metrics; i++) {
                count += s_points(sm->metrics[i]);
            }
        }
    }
    return count;
}

static void s_metric(drv_otlp_walk_t *w, const otlp_metric_t *metric, const msgpack_object_kv *context)
{
    const char *dup = NULL;
    if (!drv_otlp_obj_unique(metric->metadata, metric->n_metadata, &dup)) {
        drv_otlp_obj_reject(w, s_points(metric), "a metric's metadata", dup);
        return;
    }
    metric_t m = {.metric = metric,
                  .temporality = -1,
                  .monotonic = -1,
                  .metadata = drv_otlp_obj_attributes(&w->b, metric->metadata, metric->n_metadata, 2)};
    switch (metric->data_case) {
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE:
        m.type = "gauge";
        TAKE_POINTS(w, &m, context, metric->gauge, POINT_UNIQUE, s_number);
        break;
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM:
        m.type = "sum";
        m.temporality = metric->sum->aggregation_temporality;
        m.monotonic = metric->sum->is_monotonic;
        TAKE_POINTS(w, &m, context, metric->sum, POINT_UNIQUE, s_number);
        break;
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_HISTOGRAM:
        m.type = "histogram";
        m.temporality = metric->histogram->aggregation_temporality;
        TAKE_POINTS(w, &m, context, metric->histogram, POINT_UNIQUE, s_histogram);
        break;
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_EXPONENTIAL_HISTOGRAM:
        m.type = "exponential_histogram";
        m.temporality = metric->exponential_histogram->aggregation_temporality;
        TAKE_POINTS(w, &m, context, metric->exponential_histogram, POINT_UNIQUE, s_exp_histogram);
        break;
    case OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUMMARY:
        m.type = "summary";
        TAKE_POINTS(w, &m, context, metric->summary, ATTRIBUTES_UNIQUE, s_summary);
        break;
    default:
        break;
    }
}

void drv_otlp_metrics_walk(drv_otlp_walk_t *w, const otlp_metrics_request_t *req)
{
    for (size_t r = 0; r < req->n_resource_metrics; r++) {
        const otlp_resource_metrics_t *rm = req->resource_metrics[r];
        for (size_t s = 0; s < rm->n_scope_metrics; s++) {
            const otlp_scope_metrics_t *sm = rm->scope_metrics[s];
            drv_otlp_context_t c = {rm->resource, rm->schema_url, sm->scope};
            const char *dup = NULL;
            if (!drv_otlp_obj_context_unique(&c, &dup)) {
                for (size_t i = 0; i < sm->n_metrics; i++) {
                    drv_otlp_obj_reject(w, s_points(sm->metrics[i]), "a resource or scope", dup);
                }
                continue;
            }
            msgpack_object_kv context[CONTEXT_PAIRS];
            drv_otlp_obj_context(&w->b, &c, context);
            for (size_t i = 0; i < sm->n_metrics; i++) {
                s_metric(w, sm->metrics[i], context);
            }
        }
    }
}
