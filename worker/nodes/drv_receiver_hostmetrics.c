/*  receiver:hostmetrics — the host's figures every interval_secs, as
    metric records (docs/operations.md, "Host metrics"): one record per
    data point, as receiver:otlp makes them from OTLP metrics, so that
    exporter:otlp sends them as metrics. The scrapers are worker/host/;
    the first scrape is at start, then one per interval (a timerfd the
    instance polls). Sums are cumulative from the host's boot. A scrape
    the pipeline cannot take (a full disk buffer) is left out, counted as
    an error: the next one carries the same counters further. */
#include "drv_host.h"
#include "drv_node.h"
#include "drv_schemas.h"

#include "drover/drv_time.h"
#include "drover/drv_version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define STR(s) ((msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)strlen(s), (s)}})
#define POINT_KEYS 13

typedef struct {
    char *root;
    unsigned scrapers;
    int64_t interval_secs;
    int timer; // readable when a scrape is due
    int64_t boot_ns;
    msgpack_object resource, scope; // shared by every record
    //  The scrape being made.
    drv_node_t *node;
    msgpack_object *records;
    size_t count, cap;
    uint64_t now_ns;
    bool failed; // out of memory
} hostmetrics_t;

//  A copy of text in the batch zone.
static msgpack_object s_text(drv_node_t *node, const char *text)
{
    size_t len = strlen(text);
    char *copy = drv_node_alloc(node, len + 1);
    memcpy(copy, text, len + 1);
    return (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)len, copy}};
}

static msgpack_object s_uint(uint64_t value)
{
    return (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = value};
}

//  A data point as a record: {signal: metric, name, unit, type, ...} (docs/operations.md, OTLP metrics).
static void s_point(void *arg, const drv_host_point_t *point)
{
    hostmetrics_t *self = arg;
    drv_node_t *node = self->node;
    if (self->count == self->cap) {
        size_t cap = self->cap ? self->cap * 2 : 256;
        msgpack_object *grown = drv_node_alloc(node, cap * sizeof *grown);
        if (self->count) {
            memcpy(grown, self->records, self->count * sizeof *grown);
        }
        self->records = grown;
        self->cap = cap;
    }
    msgpack_object_kv *attrs = drv_node_alloc(node, (size_t)(point->attrs ? point->attrs : 1) * sizeof *attrs);
    for (int i = 0; i < point->attrs; i++) {
        attrs[i] = (msgpack_object_kv){s_text(node, point->keys[i]), s_text(node, point->values[i])};
    }
    msgpack_object_kv *kv = drv_node_alloc(node, POINT_KEYS * sizeof *kv);
    size_t n = 0;
    kv[n++] = (msgpack_object_kv){STR("signal"), STR("metric")};
    kv[n++] = (msgpack_object_kv){STR("name"), s_text(node, point->name)};
    kv[n++] = (msgpack_object_kv){STR("unit"), s_text(node, point->unit)};
    kv[n++] = (msgpack_object_kv){STR("type"), point->sum ? STR("sum") : STR("gauge")};
    if (point->sum) {
        kv[n++] = (msgpack_object_kv){STR("aggregation_temporality"), s_uint(2)}; // cumulative
        kv[n++] =
            (msgpack_object_kv){STR("is_monotonic"), {.type = MSGPACK_OBJECT_BOOLEAN, .via.boolean = point->monotonic}};
        kv[n++] = (msgpack_object_kv){STR("start_time_unix_nano"), s_uint((uint64_t)self->boot_ns)};
    }
    kv[n++] = (msgpack_object_kv){STR("time_unix_nano"), s_uint(self->now_ns)};
    kv[n++] = (msgpack_object_kv){
        STR("attributes"), {.type = MSGPACK_OBJECT_MAP, .via.map = {.size = (uint32_t)point->attrs, .ptr = attrs}}};
    msgpack_object value = point->is_double ? (msgpack_object){.type = MSGPACK_OBJECT_FLOAT64, .via.f64 = point->dvalue}
                           : point->ivalue >= 0
                               ? s_uint((uint64_t)point->ivalue)
                               : (msgpack_object){.type = MSGPACK_OBJECT_NEGATIVE_INTEGER, .via.i64 = point->ivalue};
    kv[n++] = (msgpack_object_kv){STR("value"), value};
    kv[n++] = (msgpack_object_kv){STR("resource"), self->resource};
    kv[n++] = (msgpack_object_kv){STR("scope"), self->scope};
    self->records[self->count++] =
        (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {.size = (uint32_t)n, .ptr = kv}};
}

static int s_scrape(drv_node_t *node)
{
    hostmetrics_t *self = node->state;
    self->node = node;
    self->records = NULL;
    self->count = self->cap = 0;
    self->now_ns = (uint64_t)drv_time_wall_ns();
    drv_node_batch_zone(node); // cleared: the scrape is built there
    char err[400];
    if (drv_host_scrape(self->root, self->scrapers, s_point, self, err, sizeof err) > 0) {
        drv_node_record_error(node, err); // what the others read goes on
    }
    if (self->count > 0 && !drv_node_emit_objects(node, self->records, self->count)) {
        drv_node_record_error(node, "a scrape left out: the pipeline takes nothing now (its disk buffer is full)");
        return 0;
    }
    return (int)self->count;
}

static int s_fd(drv_node_t *node)
{
    hostmetrics_t *self = node->state;
    return self->timer;
}

static int s_readable(drv_node_t *node)
{
    hostmetrics_t *self = node->state;
    uint64_t expirations;
    if (read(self->timer, &expirations, sizeof expirations) != sizeof expirations) {
        return 0; // not due yet
    }
    return s_scrape(node);
}

static void s_drain(drv_node_t *node)
{
    hostmetrics_t *self = node->state;
    if (self->timer >= 0) {
        close(self->timer);
        self->timer = -1; // nothing held: drained at once
    }
}

//  The host's name: root's /etc/hostname (the host's, under /hostfs), else this one's.
static void s_host_name(const char *root, char *name, size_t size)
{
    char err[300];
    char *text = drv_host_read(root, "/etc/hostname", err, sizeof err);
    size_t len = text ? strcspn(text, " \t\r\n") : 0;
    if (len > 0 && len < size) {
        snprintf(name, size, "%.*s", (int)len, text);
    } else if (gethostname(name, size - 1) != 0) {
        snprintf(name, size, "localhost");
    }
    free(text);
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    hostmetrics_t *self = calloc(1, sizeof *self);
    node->state = self;
    self->timer = -1;
    self->root = strdup(json_string_value(json_object_get(config, "root_path")));
    self->interval_secs = json_integer_value(json_object_get(config, "interval_secs"));
    size_t i;
    json_t *name;
    json_array_foreach(json_object_get(config, "scrapers"), i, name)
    {
        self->scrapers |= drv_host_scraper(json_string_value(name));
    }
    self->boot_ns = drv_host_boot_ns(self->root);
    if (self->boot_ns == 0) {
        snprintf(err, errlen, "node %s: %s/proc/stat has no btime: is root_path the host's root?", node->id,
                 strcmp(self->root, "/") ? self->root : "");
        return -1;
    }
    char host[256];
    s_host_name(self->root, host, sizeof host);
    json_t *resource = json_pack("{s:s}", "host.name", host);
    json_t *scope = json_pack("{s:s, s:s}", "name", "drover/receiver/hostmetrics", "version", drv_version());
    int rc = drv_node_object(node, resource, &self->resource) | drv_node_object(node, scope, &self->scope);
    json_decref(resource);
    json_decref(scope);
    self->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct itimerspec every = {.it_interval = {.tv_sec = self->interval_secs}, .it_value = {.tv_nsec = 1}};
    if (rc != 0 || self->timer < 0 || timerfd_settime(self->timer, 0, &every, NULL) != 0) {
        snprintf(err, errlen, "node %s: cannot set its timer", node->id);
        return -1;
    }
    return 0;
}

static void s_destroy(drv_node_t *node)
{
    hostmetrics_t *self = node->state;
    if (!self) {
        return;
    }
    if (self->timer >= 0) {
        close(self->timer);
    }
    free(self->root);
    free(self);
}

const drv_node_kind_t drv_receiver_hostmetrics = {
    .schema = &drv_schema_receiver_hostmetrics,
    .init = s_init,
    .fd = s_fd,
    .readable = s_readable,
    .drain = s_drain,
    .destroy = s_destroy,
};
