/*  drv_otlp_build — see drv_otlp_build.h. Two passes over the records: the
    first finds each one's resource and scope group (the previous record's,
    when they are equal; else by their msgpack bytes, through a hash), the second allocates every repeated field at its
   exact size and fills it (drv_otlp_build_records.c makes each record's message). */
#include "drv_buf.h"
#include "drv_otlp_build_internal.h"
#include "drv_otlp_json.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    msgpack_object record;
    size_t scope; // its scope group
    long metric;  // metrics: its metric group (-1: not a point of a known type)
} row_t;

typedef struct {
    char *key; // msgpack bytes: resource and schema URL, or scope
    size_t len;
    uint64_t hash;   // of parent and key
    size_t parent;   // a scope group's resource group
    size_t children; // resource groups: scope groups; scope groups: records
    void *message;   // ResourceLogs/Spans or ScopeLogs/Spans
} group_t;

//  Groups found by the hash of their parent and key bytes (open addressing,
//  at most half full), so a batch of many resources is not a quadratic scan.
typedef struct {
    group_t *groups;
    size_t n;
    long *slots; // group index + 1; 0: empty
    size_t mask;
} groups_t;

static uint64_t s_hash(size_t parent, const drv_buf_t *key)
{
    uint64_t h = 14695981039346656037ULL ^ parent;
    for (size_t i = 0; i < key->len; i++) {
        h = (h ^ (unsigned char)key->data[i]) * 1099511628211ULL;
    }
    return h;
}

//  The group with parent and these key bytes, added when there is none.
//  Returns its index, or -1 out of memory.
static long s_group(build_t *b, groups_t *gs, size_t parent, const drv_buf_t *key, bool *added)
{
    uint64_t hash = s_hash(parent, key);
    size_t slot = hash & gs->mask;
    for (; gs->slots[slot]; slot = (slot + 1) & gs->mask) {
        group_t *g = &gs->groups[gs->slots[slot] - 1];
        if (g->hash == hash && g->parent == parent && g->len == key->len && !memcmp(g->key, key->data, key->len)) {
            *added = false;
            return gs->slots[slot] - 1;
        }
    }
    group_t *g = &gs->groups[gs->n];
    g->key = msgpack_zone_malloc(b->zone, key->len ? key->len : 1);
    if (!g->key) {
        return -1;
    }
    memcpy(g->key, key->data, key->len);
    g->len = key->len;
    g->hash = hash;
    g->parent = parent;
    gs->slots[slot] = (long)++gs->n;
    *added = true;
    return (long)gs->n - 1;
}

static int s_key(drv_buf_t *key, const msgpack_object *a, const msgpack_object *b)
{
    static const msgpack_object nil = {.type = MSGPACK_OBJECT_NIL};
    drv_buf_reset(key);
    msgpack_packer pk;
    msgpack_packer_init(&pk, key, drv_buf_msgpack_write);
    return msgpack_pack_object(&pk, a ? *a : nil) || msgpack_pack_object(&pk, b ? *b : nil) ? -1 : 0;
}

static bool s_same(const msgpack_object *a, const msgpack_object *b)
{
    return a == b || (a && b && msgpack_object_equal(*a, *b));
}

//  Pass one: every row's scope group; counts in the groups. A record with
//  the same resource and scope as the one before it (the usual run) is in
//  its group without packing a key.
static int s_group_rows(build_t *b, row_t *rows, size_t count, groups_t *resources, groups_t *scopes)
{
    drv_buf_t key = {0};
    int rc = 0;
    long r = -1, s = -1;
    const msgpack_object *last_resource = NULL, *last_url = NULL, *last_scope = NULL;
    for (size_t i = 0; i < count && rc == 0; i++) {
        const msgpack_object *record = &rows[i].record;
        const msgpack_object *resource = drv_otlp_get(record, "resource");
        const msgpack_object *url = drv_otlp_get(record, "resource_schema_url");
        const msgpack_object *scope = drv_otlp_get(record, "scope");
        bool added = false;
        bool same_resource = i > 0 && s_same(resource, last_resource) && s_same(url, last_url);
        if (!same_resource) {
            r = s_key(&key, resource, url) == 0 ? s_group(b, resources, 0, &key, &added) : -1;
        }
        if (r >= 0 && !(same_resource && s_same(scope, last_scope))) {
            s = s_key(&key, scope, NULL) == 0 ? s_group(b, scopes, (size_t)r, &key, &added) : -1;
            resources->groups[r].children += s >= 0 && added;
        }
        if (r < 0 || s < 0) {
            rc = -1;
            break;
        }
        scopes->groups[s].children++;
        rows[i].scope = (size_t)s;
        last_resource = resource;
        last_url = url;
        last_scope = scope;
    }
    drv_buf_free(&key);
    return rc;
}

static otlp_resource_t *s_resource(build_t *b, const msgpack_object *record)
{
    otlp_resource_t *resource = drv_otlp_new(b, &opentelemetry__proto__resource__v1__resource__descriptor);
    if (!resource || drv_otlp_attributes(b, drv_otlp_get(record, "resource"), NULL, 0, &resource->attributes,
                                         &resource->n_attributes)) {
        return NULL;
    }
    return resource;
}

static otlp_scope_t *s_scope(build_t *b, const msgpack_object *record)
{
    const msgpack_object *map = drv_otlp_get(record, "scope");
    otlp_scope_t *scope = drv_otlp_new(b, &opentelemetry__proto__common__v1__instrumentation_scope__descriptor);
    if (!scope ||
        drv_otlp_attributes(b, drv_otlp_get(map, "attributes"), NULL, 0, &scope->attributes, &scope->n_attributes)) {
        return NULL;
    }
    scope->name = drv_otlp_string_of(b, drv_otlp_get(map, "name"));
    scope->version = drv_otlp_string_of(b, drv_otlp_get(map, "version"));
    return scope;
}

//  Pass two, logs: the request with every group and record in place.
static ProtobufCMessage *s_logs(build_t *b, row_t *rows, size_t count, group_t *resources, size_t n_resources,
                                group_t *scopes, size_t n_scopes)
{
    otlp_logs_request_t *request =
        drv_otlp_new(b, &opentelemetry__proto__collector__logs__v1__export_logs_service_request__descriptor);
    if (!request || !(request->resource_logs = drv_otlp_array(b, n_resources))) {
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        const msgpack_object *record = &rows[i].record;
        group_t *s = &scopes[rows[i].scope], *r = &resources[s->parent];
        otlp_resource_logs_t *rl = r->message;
        if (!rl) {
            rl = r->message = drv_otlp_new(b, &opentelemetry__proto__logs__v1__resource_logs__descriptor);
            if (!rl || !(rl->resource = s_resource(b, record)) || !(rl->scope_logs = drv_otlp_array(b, r->children))) {
                return NULL;
            }
            rl->schema_url = drv_otlp_string_of(b, drv_otlp_get(record, "resource_schema_url"));
            request->resource_logs[request->n_resource_logs++] = rl;
        }
        otlp_scope_logs_t *sl = s->message;
        if (!sl) {
            sl = s->message = drv_otlp_new(b, &opentelemetry__proto__logs__v1__scope_logs__descriptor);
            if (!sl || !(sl->scope = s_scope(b, record)) || !(sl->log_records = drv_otlp_array(b, s->children))) {
                return NULL;
            }
            rl->scope_logs[rl->n_scope_logs++] = sl;
        }
        const msgpack_object_kv **extras = drv_otlp_array(b, record->via.map.size);
        otlp_log_t *log = extras ? drv_otlp_build_log(b, record, extras) : NULL;
        if (!log) {
            return NULL;
        }
        sl->log_records[sl->n_log_records++] = log;
    }
    (void)n_scopes;
    return &request->base;
}

//  Pass two, traces.
static ProtobufCMessage *s_traces(build_t *b, row_t *rows, size_t count, group_t *resources, size_t n_resources,
                                  group_t *scopes, size_t n_scopes)
{
    otlp_traces_request_t *request =
        drv_otlp_new(b, &opentelemetry__proto__collector__trace__v1__export_trace_service_request__descriptor);
    if (!request || !(request->resource_spans = drv_otlp_array(b, n_resources))) {
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        const msgpack_object *record = &rows[i].record;
        group_t *s = &scopes[rows[i].scope], *r = &resources[s->parent];
        otlp_resource_spans_t *rs = r->message;
        if (!rs) {
            rs = r->message = drv_otlp_new(b, &opentelemetry__proto__trace__v1__resource_spans__descriptor);
            if (!rs || !(rs->resource = s_resource(b, record)) || !(rs->scope_spans = drv_otlp_array(b, r->children))) {
                return NULL;
            }
            rs->schema_url = drv_otlp_string_of(b, drv_otlp_get(record, "resource_schema_url"));
            request->resource_spans[request->n_resource_spans++] = rs;
        }
        otlp_scope_spans_t *ss = s->message;
        if (!ss) {
            ss = s->message = drv_otlp_new(b, &opentelemetry__proto__trace__v1__scope_spans__descriptor);
            if (!ss || !(ss->scope = s_scope(b, record)) || !(ss->spans = drv_otlp_array(b, s->children))) {
                return NULL;
            }
            rs->scope_spans[rs->n_scope_spans++] = ss;
        }
        const msgpack_object_kv **extras = drv_otlp_array(b, record->via.map.size);
        otlp_span_t *span = extras ? drv_otlp_build_span(b, record, extras) : NULL;
        if (!span) {
            return NULL;
        }
        ss->spans[ss->n_spans++] = span;
    }
    (void)n_scopes;
    return &request->base;
}

//  Metrics, pass one and a half: within its scope group, every point's
//  metric group, by what makes a Metric (name, type, unit, description,
//  temporality, monotonicity, metadata).
static int s_group_metrics(build_t *b, row_t *rows, size_t count, groups_t *metrics)
{
    static const char *const keys[] = {"name",         "type",    "unit", "description", "aggregation_temporality",
                                       "is_monotonic", "metadata"};
    static const msgpack_object nil = {.type = MSGPACK_OBJECT_NIL};
    drv_buf_t key = {0};
    int rc = 0;
    for (size_t i = 0; i < count && rc == 0; i++) {
        rows[i].metric = -1;
        if (drv_otlp_metric_kind(&rows[i].record) == DRV_METRIC_NONE) {
            continue;
        }
        drv_buf_reset(&key);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &key, drv_buf_msgpack_write);
        for (size_t k = 0; k < sizeof keys / sizeof *keys && rc == 0; k++) {
            const msgpack_object *v = drv_otlp_get_n(&rows[i].record, keys[k], strlen(keys[k]));
            rc = msgpack_pack_object(&pk, v ? *v : nil) ? -1 : 0;
        }
        bool added;
        long m = rc == 0 ? s_group(b, metrics, rows[i].scope, &key, &added) : -1;
        if (m < 0) {
            rc = -1;
            break;
        }
        metrics->groups[m].children++;
        rows[i].metric = m;
    }
    drv_buf_free(&key);
    return rc;
}

//  Pass two, metrics.
static ProtobufCMessage *s_metrics(build_t *b, row_t *rows, size_t count, group_t *resources, size_t n_resources,
                                   group_t *scopes, group_t *metrics)
{
    otlp_metrics_request_t *request =
        drv_otlp_new(b, &opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__descriptor);
    if (!request || !(request->resource_metrics = drv_otlp_array(b, n_resources))) {
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        const msgpack_object *record = &rows[i].record;
        if (rows[i].metric < 0) {
            continue;
        }
        group_t *s = &scopes[rows[i].scope], *r = &resources[s->parent], *m = &metrics[rows[i].metric];
        otlp_resource_metrics_t *rm = r->message;
        if (!rm) {
            rm = r->message = drv_otlp_new(b, &opentelemetry__proto__metrics__v1__resource_metrics__descriptor);
            if (!rm || !(rm->resource = s_resource(b, record)) ||
                !(rm->scope_metrics = drv_otlp_array(b, r->children))) {
                return NULL;
            }
            rm->schema_url = drv_otlp_string_of(b, drv_otlp_get(record, "resource_schema_url"));
            request->resource_metrics[request->n_resource_metrics++] = rm;
        }
        otlp_scope_metrics_t *sm = s->message;
        if (!sm) {
            sm = s->message = drv_otlp_new(b, &opentelemetry__proto__metrics__v1__scope_metrics__descriptor);
            if (!sm || !(sm->scope = s_scope(b, record)) || !(sm->metrics = drv_otlp_array(b, s->children))) {
                return NULL;
            }
            rm->scope_metrics[rm->n_scope_metrics++] = sm;
        }
        otlp_metric_t *metric = m->message;
        if (!metric) {
            metric = m->message = drv_otlp_build_metric(b, record, m->children);
            if (!metric) {
                return NULL;
            }
            sm->metrics[sm->n_metrics++] = metric;
        }
        if (drv_otlp_build_point(b, metric, record) != 0) {
            return NULL;
        }
    }
    return &request->base;
}

//  Room for count groups, their hash slots at most half full.
static int s_groups_init(groups_t *gs, size_t count)
{
    size_t slots = 4;
    while (slots < 2 * (count ? count : 1)) {
        slots *= 2;
    }
    gs->groups = calloc(count ? count : 1, sizeof *gs->groups);
    gs->slots = calloc(slots, sizeof *gs->slots);
    gs->mask = slots - 1;
    gs->n = 0;
    return gs->groups && gs->slots ? 0 : -1;
}

static void s_groups_free(groups_t *gs)
{
    free(gs->groups);
    free(gs->slots);
}

int drv_otlp_build(drv_otlp_built_t *built, drv_otlp_signal_t signal, const msgpack_object *records, size_t count)
{
    memset(built, 0, sizeof *built);
    msgpack_zone_init(&built->zone, 64 * 1024);
    build_t b = {&built->zone};
    row_t *rows = calloc(count ? count : 1, sizeof *rows);
    groups_t resources, scopes, metrics = {0};
    int rc = s_groups_init(&resources, count) | s_groups_init(&scopes, count) |
             (signal == DRV_OTLP_METRICS ? s_groups_init(&metrics, count) : 0);
    rc = rc || !rows ? -1 : 0;
    for (size_t n = 0; rc == 0 && n < count; n++) {
        rows[n].record = records[n];
        rc = records[n].type == MSGPACK_OBJECT_MAP ? 0 : -1;
    }
    rc = rc ? rc : s_group_rows(&b, rows, count, &resources, &scopes);
    rc = rc || signal != DRV_OTLP_METRICS ? rc : s_group_metrics(&b, rows, count, &metrics);
    if (rc == 0) {
        built->request.signal = signal;
        group_t *r = resources.groups, *s = scopes.groups;
        built->request.message = signal == DRV_OTLP_LOGS ? s_logs(&b, rows, count, r, resources.n, s, scopes.n)
                                 : signal == DRV_OTLP_TRACES
                                     ? s_traces(&b, rows, count, r, resources.n, s, scopes.n)
                                     : s_metrics(&b, rows, count, r, resources.n, s, metrics.groups);
        rc = built->request.message ? 0 : -1;
    }
    free(rows);
    s_groups_free(&resources);
    s_groups_free(&scopes);
    s_groups_free(&metrics);
    if (rc != 0) {
        msgpack_zone_destroy(&built->zone);
        memset(built, 0, sizeof *built);
    }
    return rc;
}

void drv_otlp_built_free(drv_otlp_built_t *built)
{
    if (built->request.message) {
        msgpack_zone_destroy(&built->zone);
        memset(built, 0, sizeof *built);
    }
}

int drv_otlp_encode(drv_otlp_signal_t signal, bool json, const msgpack_object *records, size_t count, drv_buf_t *out)
{
    drv_otlp_built_t built;
    if (drv_otlp_build(&built, signal, records, count) != 0) {
        return -1;
    }
    int rc;
    if (json) {
        rc = drv_otlp_json_write(&built.request, out);
    } else {
        size_t packed = protobuf_c_message_get_packed_size(built.request.message);
        rc = drv_buf_reserve(out, packed);
        if (rc == 0) {
            out->len += protobuf_c_message_pack(built.request.message, (uint8_t *)out->data + out->len);
        }
    }
    drv_otlp_built_free(&built);
    return rc;
}
