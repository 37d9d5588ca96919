/*  drv_telemetry_otlp — see drv_telemetry_otlp.h. Every message of a
    request lives in one msgpack zone, freed once it is packed. */
#include "drv_telemetry_otlp.h"

#include "drover/drv_log.h"
#include "drover/drv_version.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb-c.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb-c.h"

#include <math.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define CUMULATIVE 2 // metrics.proto's AGGREGATION_TEMPORALITY_CUMULATIVE

typedef Opentelemetry__Proto__Common__V1__KeyValue kv_t;
typedef Opentelemetry__Proto__Common__V1__AnyValue any_t;
typedef Opentelemetry__Proto__Metrics__V1__Metric metric_t;
typedef Opentelemetry__Proto__Metrics__V1__NumberDataPoint number_t;
typedef Opentelemetry__Proto__Metrics__V1__HistogramDataPoint histo_t;

static void *s_new(msgpack_zone *zone, size_t size)
{
    void *p = msgpack_zone_malloc(zone, size);
    if (p) {
        memset(p, 0, size);
    }
    return p;
}

static char *s_text(msgpack_zone *zone, const char *text, size_t len)
{
    char *copy = msgpack_zone_malloc(zone, len + 1);
    if (copy) {
        memcpy(copy, text, len);
        copy[len] = 0;
    }
    return copy;
}

static kv_t *s_kv(msgpack_zone *zone, const char *key, size_t key_len, const char *value, size_t value_len)
{
    kv_t *kv = s_new(zone, sizeof *kv);
    any_t *any = s_new(zone, sizeof *any);
    if (!kv || !any) {
        return NULL;
    }
    opentelemetry__proto__common__v1__key_value__init(kv);
    opentelemetry__proto__common__v1__any_value__init(any);
    kv->key = s_text(zone, key, key_len);
    any->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
    any->string_value = s_text(zone, value, value_len);
    kv->value = any;
    return kv->key && any->string_value ? kv : NULL;
}

//  An array of n pointers grown to hold one more (zone memory: the old one stays until the zone goes).
static void **s_grow(msgpack_zone *zone, void **items, size_t n)
{
    if (n != 0 && (n < 8 || (n & (n - 1)) != 0)) {
        return items; // room left: capacities are 8, then powers of two
    }
    size_t cap = n == 0 ? 8 : 2 * n;
    void **grown = s_new(zone, cap * sizeof *grown);
    if (grown && n) {
        memcpy(grown, items, n * sizeof *grown);
    }
    return grown;
}

static Opentelemetry__Proto__Resource__V1__Resource *s_resource(msgpack_zone *zone, const drv_telemetry_attr_t *attrs,
                                                                size_t n)
{
    Opentelemetry__Proto__Resource__V1__Resource *resource = s_new(zone, sizeof *resource);
    kv_t **list = s_new(zone, (n ? n : 1) * sizeof *list);
    if (!resource || !list) {
        return NULL;
    }
    opentelemetry__proto__resource__v1__resource__init(resource);
    for (size_t i = 0; i < n; i++) {
        if (!(list[i] = s_kv(zone, attrs[i].key, strlen(attrs[i].key), attrs[i].value, strlen(attrs[i].value)))) {
            return NULL;
        }
    }
    resource->attributes = list;
    resource->n_attributes = n;
    return resource;
}

//  ---------------------------------------------------------------- metrics

//  A sample's labels ({a="x",le="1"}) as attributes, le apart (*le: its
//  value, NULL when none); *key: the labels but le, to find a histogram's
//  point. Returns the text after the closing brace, or NULL.
static const char *s_labels(msgpack_zone *zone, const char *p, kv_t ***attrs, size_t *n, const char **le,
                            size_t *le_len, const char **key, size_t *key_len)
{
    *attrs = NULL, *n = 0, *le = NULL, *le_len = 0, *key = p, *key_len = 0;
    const char *start = p;
    while (*p && *p != '}') {
        const char *name = p;
        while (*p && *p != '=') {
            p++;
        }
        if (p[0] != '=' || p[1] != '"') {
            return NULL;
        }
        size_t name_len = (size_t)(p - name);
        p += 2;
        char value[1024];
        size_t len = 0;
        while (*p && *p != '"') {
            char c = *p++;
            if (c == '\\' && *p) {
                c = *p == 'n' ? '\n' : *p;
                p++;
            }
            if (len < sizeof value) {
                value[len++] = c;
            }
        }
        if (*p++ != '"') {
            return NULL;
        }
        if (name_len == 2 && !memcmp(name, "le", 2)) {
            *le = s_text(zone, value, len), *le_len = len;
        } else {
            *attrs = (kv_t **)s_grow(zone, (void **)*attrs, *n);
            kv_t *kv = *attrs ? s_kv(zone, name, name_len, value, len) : NULL;
            if (!kv) {
                return NULL;
            }
            (*attrs)[(*n)++] = kv;
            *key_len = (size_t)(p - start);
        }
        p += *p == ',';
    }
    return *p == '}' ? p + 1 : NULL;
}

typedef struct {
    metric_t *metric;
    const char *name; // the family's, as in TYPE
    size_t name_len;
    int type; // 0 gauge, 1 counter, 2 histogram
    void **points;
    size_t count;
    const char **keys; // a histogram's points: their labels but le
    size_t *key_lens;
    double *cumulative; // per point: the last bucket's cumulative count
} family_t;

static histo_t *s_histo_point(msgpack_zone *zone, family_t *f, kv_t **attrs, size_t n, const char *key, size_t key_len,
                              uint64_t start_ns, uint64_t now_ns)
{
    for (size_t i = 0; i < f->count; i++) {
        if (f->key_lens[i] == key_len && !memcmp(f->keys[i], key, key_len)) {
            return f->points[i];
        }
    }
    f->points = s_grow(zone, f->points, f->count);
    f->keys = (const char **)s_grow(zone, (void **)f->keys, f->count);
    size_t *lens = s_new(zone, (f->count + 1) * sizeof *lens);
    histo_t *point = s_new(zone, sizeof *point);
    if (!f->points || !f->keys || !lens || !point) {
        return NULL;
    }
    if (f->count) {
        memcpy(lens, f->key_lens, f->count * sizeof *lens);
    }
    opentelemetry__proto__metrics__v1__histogram_data_point__init(point);
    point->attributes = attrs, point->n_attributes = n;
    point->start_time_unix_nano = start_ns, point->time_unix_nano = now_ns;
    f->key_lens = lens;
    f->keys[f->count] = s_text(zone, key, key_len), f->key_lens[f->count] = key_len;
    if (!f->keys[f->count]) {
        return NULL;
    }
    f->points[f->count++] = point;
    return point;
}

//  A histogram's bucket (le, cumulative count) into its point: bounds and
//  counts per bucket; +Inf's count closes it.
static int s_bucket(msgpack_zone *zone, histo_t *point, const char *le, double cumulative)
{
    double bound = strtod(le, NULL);
    double before = 0;
    for (size_t i = 0; i < point->n_bucket_counts; i++) {
        before += (double)point->bucket_counts[i];
    }
    uint64_t *counts = s_new(zone, (point->n_bucket_counts + 1) * sizeof *counts);
    double *bounds = s_new(zone, (point->n_explicit_bounds + 1) * sizeof *bounds);
    if (!counts || !bounds) {
        return -1;
    }
    if (point->n_bucket_counts) {
        memcpy(counts, point->bucket_counts, point->n_bucket_counts * sizeof *counts);
        memcpy(bounds, point->explicit_bounds, point->n_explicit_bounds * sizeof *bounds);
    }
    counts[point->n_bucket_counts++] = cumulative > before ? (uint64_t)(cumulative - before) : 0;
    if (!isinf(bound)) {
        bounds[point->n_explicit_bounds++] = bound;
    }
    point->bucket_counts = counts, point->explicit_bounds = bounds;
    return 0;
}

static metric_t *s_family(msgpack_zone *zone, family_t *f, const char *name, size_t len, const char *type,
                          const char *help, size_t help_len)
{
    metric_t *m = s_new(zone, sizeof *m);
    if (!m) {
        return NULL;
    }
    opentelemetry__proto__metrics__v1__metric__init(m);
    m->name = s_text(zone, name, len);
    m->description = help ? s_text(zone, help, help_len) : (char *)"";
    *f = (family_t){.metric = m, .name = m->name, .name_len = len};
    f->type = !strncmp(type, "counter", 7) ? 1 : !strncmp(type, "histogram", 9) ? 2 : 0;
    return m->name && m->description ? m : NULL;
}

//  The family's points into its metric.
static int s_close(msgpack_zone *zone, family_t *f)
{
    metric_t *m = f->metric;
    if (f->type == 2) {
        Opentelemetry__Proto__Metrics__V1__Histogram *h = s_new(zone, sizeof *h);
        if (!h) {
            return -1;
        }
        opentelemetry__proto__metrics__v1__histogram__init(h);
        h->aggregation_temporality = CUMULATIVE;
        h->data_points = (histo_t **)f->points, h->n_data_points = f->count;
        m->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_HISTOGRAM, m->histogram = h;
    } else if (f->type == 1) {
        Opentelemetry__Proto__Metrics__V1__Sum *sum = s_new(zone, sizeof *sum);
        if (!sum) {
            return -1;
        }
        opentelemetry__proto__metrics__v1__sum__init(sum);
        sum->aggregation_temporality = CUMULATIVE;
        sum->is_monotonic = 1;
        sum->data_points = (number_t **)f->points, sum->n_data_points = f->count;
        m->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM, m->sum = sum;
    } else {
        Opentelemetry__Proto__Metrics__V1__Gauge *gauge = s_new(zone, sizeof *gauge);
        if (!gauge) {
            return -1;
        }
        opentelemetry__proto__metrics__v1__gauge__init(gauge);
        gauge->data_points = (number_t **)f->points, gauge->n_data_points = f->count;
        m->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE, m->gauge = gauge;
    }
    return 0;
}

//  One sample line of family f. 0, or -1 (memory; a line not understood is skipped).
static int s_sample(msgpack_zone *zone, family_t *f, const char *line, uint64_t start_ns, uint64_t now_ns)
{
    size_t name_len = strcspn(line, "{ ");
    const char *p = line + name_len;
    kv_t **attrs = NULL;
    size_t n = 0, le_len = 0, key_len = 0;
    const char *le = NULL, *key = "";
    if (*p == '{' && !(p = s_labels(zone, p + 1, &attrs, &n, &le, &le_len, &key, &key_len))) {
        return 0;
    }
    char *end;
    double value = strtod(p, &end);
    if (end == p) {
        return 0;
    }
    if (f->type == 2) {
        size_t base = f->name_len;
        if (name_len <= base || memcmp(line, f->name, base) != 0) {
            return 0;
        }
        const char *suffix = line + base;
        size_t suffix_len = name_len - base;
        histo_t *point = s_histo_point(zone, f, attrs, n, key, key_len, start_ns, now_ns);
        if (!point) {
            return -1;
        }
        if (suffix_len == 7 && !memcmp(suffix, "_bucket", 7) && le) {
            return s_bucket(zone, point, le, value);
        }
        if (suffix_len == 4 && !memcmp(suffix, "_sum", 4)) {
            point->has_sum_case = OPENTELEMETRY__PROTO__METRICS__V1__HISTOGRAM_DATA_POINT__HAS_SUM_SUM;
            point->sum = value;
        } else if (suffix_len == 6 && !memcmp(suffix, "_count", 6)) {
            point->count = (uint64_t)value;
        }
        return 0;
    }
    if (name_len != f->name_len || memcmp(line, f->name, name_len) != 0) {
        return 0;
    }
    number_t *point = s_new(zone, sizeof *point);
    f->points = s_grow(zone, f->points, f->count);
    if (!point || !f->points) {
        return -1;
    }
    opentelemetry__proto__metrics__v1__number_data_point__init(point);
    point->attributes = attrs, point->n_attributes = n;
    point->start_time_unix_nano = f->type == 1 ? start_ns : 0, point->time_unix_nano = now_ns;
    if (value == floor(value) && fabs(value) < 9e15) {
        point->value_case = OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_INT;
        point->as_int = (int64_t)value;
    } else {
        point->value_case = OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_DOUBLE;
        point->as_double = value;
    }
    f->points[f->count++] = point;
    return 0;
}

//  A packed request, malloc'd.
static int s_pack(const ProtobufCMessage *message, uint8_t **out, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(message);
    *out = malloc(*len ? *len : 1);
    if (!*out) {
        return -1;
    }
    protobuf_c_message_pack(message, *out);
    return 0;
}

static Opentelemetry__Proto__Common__V1__InstrumentationScope *s_scope(msgpack_zone *zone)
{
    Opentelemetry__Proto__Common__V1__InstrumentationScope *scope = s_new(zone, sizeof *scope);
    if (scope) {
        opentelemetry__proto__common__v1__instrumentation_scope__init(scope);
        scope->name = (char *)"droverd";
        scope->version = (char *)drv_version();
    }
    return scope;
}

int drv_telemetry_metrics(const char *text, const drv_telemetry_attr_t *resource, size_t attrs, uint64_t start_ns,
                          uint64_t now_ns, uint8_t **out, size_t *len)
{
    msgpack_zone zone;
    if (!msgpack_zone_init(&zone, 64 * 1024)) {
        return -1;
    }
    Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceRequest request =
        OPENTELEMETRY__PROTO__COLLECTOR__METRICS__V1__EXPORT_METRICS_SERVICE_REQUEST__INIT;
    Opentelemetry__Proto__Metrics__V1__ResourceMetrics rm = OPENTELEMETRY__PROTO__METRICS__V1__RESOURCE_METRICS__INIT;
    Opentelemetry__Proto__Metrics__V1__ScopeMetrics sm = OPENTELEMETRY__PROTO__METRICS__V1__SCOPE_METRICS__INIT;
    Opentelemetry__Proto__Metrics__V1__ResourceMetrics *rms[] = {&rm};
    Opentelemetry__Proto__Metrics__V1__ScopeMetrics *sms[] = {&sm};
    request.resource_metrics = rms, request.n_resource_metrics = 1;
    rm.scope_metrics = sms, rm.n_scope_metrics = 1;
    rm.resource = s_resource(&zone, resource, attrs);
    sm.scope = s_scope(&zone);
    int rc = rm.resource && sm.scope ? 0 : -1;
    family_t f = {0};
    const char *help = NULL;
    size_t help_len = 0;
    for (const char *line = text; rc == 0 && line && *line;) {
        const char *next = strchr(line, '\n');
        size_t line_len = next ? (size_t)(next - line) : strlen(line);
        char copy[4096];
        snprintf(copy, sizeof copy, "%.*s", (int)line_len, line);
        if (!strncmp(copy, "# HELP ", 7)) {
            const char *space = strchr(copy + 7, ' ');
            help = space ? line + (space + 1 - copy) : NULL;
            help_len = space ? line_len - (size_t)(space + 1 - copy) : 0;
        } else if (!strncmp(copy, "# TYPE ", 7)) {
            const char *name = copy + 7, *space = strchr(name, ' ');
            if (f.metric) {
                rc = s_close(&zone, &f);
            }
            sm.metrics = (metric_t **)s_grow(&zone, (void **)sm.metrics, sm.n_metrics);
            metric_t *m = rc == 0 && sm.metrics && space
                              ? s_family(&zone, &f, name, (size_t)(space - name), space + 1, help, help_len)
                              : NULL;
            rc = m ? 0 : -1;
            if (m) {
                sm.metrics[sm.n_metrics++] = m;
            }
            help = NULL;
        } else if (copy[0] && copy[0] != '#' && f.metric) {
            rc = s_sample(&zone, &f, copy, start_ns, now_ns);
        }
        line = next ? next + 1 : NULL;
    }
    rc = rc == 0 && f.metric ? s_close(&zone, &f) : rc;
    rc = rc == 0 ? s_pack(&request.base, out, len) : rc;
    msgpack_zone_destroy(&zone);
    return rc;
}

//  ---------------------------------------------------------------- logs

int drv_telemetry_logs(const drv_telemetry_line_t *lines, size_t n, const drv_telemetry_attr_t *resource, size_t attrs,
                       uint8_t **out, size_t *len)
{
    static const int severity[] = {5, 9, 13, 17}; // DEBUG, INFO, WARN, ERROR (logs.proto's SeverityNumber)
    static const char *const names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    msgpack_zone zone;
    if (!msgpack_zone_init(&zone, 64 * 1024)) {
        return -1;
    }
    Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest request =
        OPENTELEMETRY__PROTO__COLLECTOR__LOGS__V1__EXPORT_LOGS_SERVICE_REQUEST__INIT;
    Opentelemetry__Proto__Logs__V1__ResourceLogs rl = OPENTELEMETRY__PROTO__LOGS__V1__RESOURCE_LOGS__INIT;
    Opentelemetry__Proto__Logs__V1__ScopeLogs sl = OPENTELEMETRY__PROTO__LOGS__V1__SCOPE_LOGS__INIT;
    Opentelemetry__Proto__Logs__V1__ResourceLogs *rls[] = {&rl};
    Opentelemetry__Proto__Logs__V1__ScopeLogs *sls[] = {&sl};
    request.resource_logs = rls, request.n_resource_logs = 1;
    rl.scope_logs = sls, rl.n_scope_logs = 1;
    rl.resource = s_resource(&zone, resource, attrs);
    sl.scope = s_scope(&zone);
    sl.log_records = s_new(&zone, (n ? n : 1) * sizeof *sl.log_records);
    int rc = rl.resource && sl.scope && sl.log_records ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        Opentelemetry__Proto__Logs__V1__LogRecord *r = s_new(&zone, sizeof *r);
        any_t *body = s_new(&zone, sizeof *body);
        if (!r || !body) {
            rc = -1;
            break;
        }
        opentelemetry__proto__logs__v1__log_record__init(r);
        opentelemetry__proto__common__v1__any_value__init(body);
        int level = lines[i].level >= DRV_LOG_DEBUG && lines[i].level <= DRV_LOG_ERROR ? lines[i].level : DRV_LOG_INFO;
        r->time_unix_nano = r->observed_time_unix_nano = (uint64_t)lines[i].wall_ms * 1000000u;
        r->severity_number = severity[level];
        r->severity_text = (char *)names[level];
        body->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
        body->string_value = lines[i].message;
        r->body = body;
        sl.log_records[sl.n_log_records++] = r;
    }
    rc = rc == 0 ? s_pack(&request.base, out, len) : rc;
    msgpack_zone_destroy(&zone);
    return rc;
}
