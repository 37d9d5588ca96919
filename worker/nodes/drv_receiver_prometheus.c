/*  receiver:prometheus — scrapes Prometheus targets every interval_secs
    (docs/operations.md, "Scraping Prometheus targets"): one GET per
    target through libcurl's multi interface on the instance's loop (a
    target that hangs holds nothing but its own handle, until
    timeout_secs), asking for OpenMetrics 1.0 and taking the text format
    0.0.4 too (content negotiation, as Prometheus does). What a target says
    becomes metric records (worker/prom/drv_prom_text.c parses,
    drv_prom_points.c maps), with job and instance as the resource's
    service.name and service.instance.id and the target's labels on every
    point; then up (1, or 0 when the scrape failed: refused, timed out, a
    body over max_body_bytes, more samples than sample_limit, text that
    does not parse) and scrape_duration_seconds. A failed scrape emits no
    sample of the target's: only up 0, as Prometheus does. */
#include "drv_node.h"
#include "drv_prom_points.h"
#include "drv_prom_pods.h"
#include "drv_schemas.h"

#include "drover/drv_curl_loop.h"
#include "drover/drv_log.h"
#include "drover/drv_time.h"
#include "drover/drv_version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACCEPT "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

typedef struct {
    char *url;
    msgpack_object resource; // {service.name: job, service.instance.id: instance}
    msgpack_object labels;   // the target's labels, a map
    char instance[256];
    CURL *easy; // the scrape under way, or NULL
    char *body;
    size_t size;
    bool too_large;
    size_t max_body; // max_body_bytes
    int64_t started_ms;
} target_t;

typedef struct {
    drv_curl_loop_t curl;
    target_t *targets; // the config's, then the pods found
    size_t count, fixed;
    drv_prom_pods_t *pods; // kubernetes_pods: the pods annotated for scraping, or NULL
    int64_t pods_version;
    char *pods_job;
    int64_t interval_ms, timeout_ms, next_ms;
    size_t max_body, sample_limit;
    msgpack_object scope;
    bool draining;
} prometheus_t;

static size_t s_on_body(char *data, size_t size, size_t n, void *arg)
{
    target_t *t = arg;
    size_t len = size * n;
    char *grown = realloc(t->body, t->size + len + 1);
    if (!grown) {
        return 0;
    }
    t->body = grown;
    memcpy(t->body + t->size, data, len);
    t->size += len;
    t->body[t->size] = 0;
    return len;
}

static size_t s_write(char *data, size_t size, size_t n, void *arg)
{
    target_t *t = arg;
    if (t->size + size * n > t->max_body) {
        t->too_large = true;
        return 0; // the transfer ends: the scrape fails
    }
    return s_on_body(data, size, n, arg);
}

static void s_start(prometheus_t *self, target_t *t)
{
    t->easy = curl_easy_init();
    if (!t->easy) {
        return;
    }
    t->size = 0;
    t->too_large = false;
    t->started_ms = drv_time_mono_ms();
    static struct curl_slist *headers;
    if (!headers) {
        headers = curl_slist_append(NULL, ACCEPT);
    }
    char agent[64];
    snprintf(agent, sizeof agent, "drover/%s", drv_version());
    curl_easy_setopt(t->easy, CURLOPT_URL, t->url);
    curl_easy_setopt(t->easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(t->easy, CURLOPT_USERAGENT, agent);
    curl_easy_setopt(t->easy, CURLOPT_ACCEPT_ENCODING, ""); // gzip as a target offers it
    curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, (long)self->timeout_ms);
    curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, s_write);
    curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t);
    curl_multi_add_handle(self->curl.multi, t->easy);
}

//  A gauge of the target's own (up, scrape_duration_seconds).
static msgpack_object s_gauge(drv_node_t *node, prometheus_t *self, const target_t *t, const char *name, double value,
                              int64_t ms)
{
    msgpack_object_kv *kv = drv_node_alloc(node, 8 * sizeof *kv);
    uint32_t n = 0;
#define KV(k, v) kv[n++] = (msgpack_object_kv){{.type = MSGPACK_OBJECT_STR, .via.str = {sizeof k - 1, k}}, v}
    KV("signal", ((msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {6, "metric"}}));
    KV("name", ((msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)strlen(name), name}}));
    KV("type", ((msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {5, "gauge"}}));
    KV("time_unix_nano",
       ((msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = (uint64_t)ms * 1000000u}));
    KV("attributes", t->labels);
    KV("value", ((msgpack_object){.type = MSGPACK_OBJECT_FLOAT64, .via.f64 = value}));
    KV("resource", t->resource);
    KV("scope", self->scope);
#undef KV
    return (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {.size = n, .ptr = kv}};
}

//  A scrape ended: its records (or only up 0) emitted.
static int s_finish(drv_node_t *node, prometheus_t *self, target_t *t, CURLcode rc)
{
    long status = 0, om = 0;
    char *type = NULL;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &type);
    om = type && !strncmp(type, "application/openmetrics-text", 28);
    int64_t now_wall = drv_time_wall_ms();
    double secs = (double)(drv_time_mono_ms() - t->started_ms) / 1000.0;
    msgpack_zone *zone = drv_node_batch_zone(node); // cleared: the scrape's records are made there
    char why[400] = "";
    msgpack_object *records = NULL;
    int n = 0;
    if (rc != CURLE_OK) {
        snprintf(why, sizeof why, "%s", t->too_large ? "the body is over max_body_bytes" : curl_easy_strerror(rc));
    } else if (status != 200) {
        snprintf(why, sizeof why, "HTTP %ld", status);
    } else {
        drv_prom_points_t *points = drv_prom_points_new(zone, &t->resource, &self->scope, &t->labels, now_wall);
        int samples = points ? drv_prom_text_parse(t->body ? t->body : (char[1]){0}, t->size, om, self->sample_limit,
                                                   drv_prom_points_add, points, why, sizeof why)
                             : -1;
        n = samples >= 0 ? drv_prom_points_records(points, &records) : -1;
        drv_prom_points_destroy(&points);
        if (n < 0 && !why[0]) {
            snprintf(why, sizeof why, "out of memory");
        }
    }
    curl_multi_remove_handle(self->curl.multi, t->easy);
    curl_easy_cleanup(t->easy);
    t->easy = NULL;
    free(t->body);
    t->body = NULL;
    t->size = 0;
    if (why[0]) {
        char line[600];
        snprintf(line, sizeof line, "scrape of %s failed: %s", t->url, why);
        drv_node_record_error(node, line);
        n = 0;
    }
    msgpack_object *all = drv_node_alloc(node, ((size_t)n + 2) * sizeof *all);
    if (n > 0) {
        memcpy(all, records, (size_t)n * sizeof *all);
    }
    all[n] = s_gauge(node, self, t, "up", why[0] ? 0 : 1, now_wall);
    all[n + 1] = s_gauge(node, self, t, "scrape_duration_seconds", secs, now_wall);
    return drv_node_emit_objects(node, all, (size_t)n + 2) ? n + 2 : 0;
}

//  instance: the URL's host:port, as Prometheus names a target.
static void s_instance(const char *url, char *out, size_t size)
{
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    size_t len = strcspn(host, "/?#");
    snprintf(out, size, "%.*s", (int)len, host);
}

//  A target: its URL, and job, instance and labels as every record of it says them.
static int s_target_init(drv_node_t *node, prometheus_t *self, target_t *t, const char *url, const char *job,
                         const json_t *given)
{
    t->url = strdup(url);
    s_instance(t->url, t->instance, sizeof t->instance);
    json_t *resource = json_pack("{s:s, s:s}", "service.name", job, "service.instance.id", t->instance);
    json_t *labels = json_is_object(given) ? json_incref((json_t *)given) : json_object();
    int rc = drv_node_object(node, resource, &t->resource) | drv_node_object(node, labels, &t->labels);
    json_decref(resource);
    json_decref(labels);
    t->max_body = self->max_body;
    return rc;
}

static void s_target_free(target_t *t)
{
    free(t->body);
    free(t->url);
    *t = (target_t){0};
}

//  The pods found, as the targets after the config's, when they changed and
//  no scrape is under way (a target's place in the array is its handle's).
static void s_refresh_pods(drv_node_t *node, prometheus_t *self)
{
    if (!self->pods || drv_prom_pods_version(self->pods) == self->pods_version) {
        return;
    }
    for (size_t i = 0; i < self->count; i++) {
        if (self->targets[i].easy) {
            return; // at the next turn
        }
    }
    json_t *found = drv_prom_pods_targets(self->pods, &self->pods_version);
    for (size_t i = self->fixed; i < self->count; i++) {
        s_target_free(&self->targets[i]);
    }
    size_t count = self->fixed + json_array_size(found);
    target_t *grown = realloc(self->targets, (count ? count : 1) * sizeof *grown);
    if (!grown) {
        self->count = self->fixed;
        json_decref(found);
        return;
    }
    self->targets = grown;
    size_t i;
    json_t *pod;
    json_array_foreach(found, i, pod)
    {
        target_t *t = &self->targets[self->fixed + i];
        *t = (target_t){0};
        json_t *labels =
            json_pack("{s:O, s:O}", "namespace", json_object_get(pod, "namespace"), "pod", json_object_get(pod, "pod"));
        s_target_init(node, self, t, json_string_value(json_object_get(pod, "url")), self->pods_job, labels);
        json_decref(labels);
    }
    self->count = count;
    drv_info("prometheus: node=%s scrapes %zu pods found through the Kubernetes API", node->id, json_array_size(found));
    json_decref(found);
}

static int s_readable(drv_node_t *node)
{
    prometheus_t *self = node->state;
    drv_curl_loop_run(&self->curl);
    int emitted = 0;
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(self->curl.multi, &left))) {
        if (msg->msg == CURLMSG_DONE) {
            target_t *t = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
            emitted += s_finish(node, self, t, msg->data.result);
        }
    }
    int64_t now = drv_time_mono_ms();
    if (!self->draining && now >= self->next_ms) {
        self->next_ms = now + self->interval_ms;
        s_refresh_pods(node, self);
        for (size_t i = 0; i < self->count; i++) {
            if (!self->targets[i].easy) { // one scrape of a target at a time: a slow one skips a turn
                s_start(self, &self->targets[i]);
            }
        }
        drv_curl_loop_run(&self->curl);
    }
    return emitted;
}

static int s_fd(drv_node_t *node)
{
    prometheus_t *self = node->state;
    return self->draining ? -1 : self->curl.epoll_fd;
}

static int64_t s_timeout_ms(drv_node_t *node)
{
    prometheus_t *self = node->state;
    if (self->draining) {
        return -1;
    }
    int64_t now = drv_time_mono_ms();
    int64_t due = self->next_ms;
    if (self->curl.due_ms >= 0 && self->curl.due_ms < due) {
        due = self->curl.due_ms;
    }
    return due > now ? due - now : 0;
}

static void s_drain(drv_node_t *node)
{
    prometheus_t *self = node->state;
    self->draining = true; // scrapes under way are left: the next instance scrapes on its own schedule
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    prometheus_t *self = calloc(1, sizeof *self);
    node->state = self;
    self->interval_ms = json_integer_value(json_object_get(config, "interval_secs")) * 1000;
    self->timeout_ms = json_integer_value(json_object_get(config, "timeout_secs")) * 1000;
    self->max_body = (size_t)json_integer_value(json_object_get(config, "max_body_bytes"));
    self->sample_limit = (size_t)json_integer_value(json_object_get(config, "sample_limit"));
    if (self->sample_limit == 0) {
        self->sample_limit = (size_t)-1;
    }
    if (drv_curl_loop_init(&self->curl) != 0) {
        snprintf(err, errlen, "node %s: cannot set up the HTTP client", node->id);
        return -1;
    }
    json_t *scope = json_pack("{s:s, s:s}", "name", "drover/receiver/prometheus", "version", drv_version());
    int rc = drv_node_object(node, scope, &self->scope);
    json_decref(scope);
    const json_t *targets = json_object_get(config, "targets");
    self->count = self->fixed = json_array_size(targets);
    self->targets = calloc(self->count ? self->count : 1, sizeof *self->targets);
    size_t i;
    const json_t *target;
    json_array_foreach(targets, i, target)
    {
        const char *job = json_string_value(json_object_get(target, "job"));
        rc |= s_target_init(node, self, &self->targets[i], json_string_value(json_object_get(target, "url")),
                            job ? job : node->id, json_object_get(target, "labels"));
    }
    const json_t *pods = json_object_get(config, "kubernetes_pods");
    if (json_is_object(pods)) {
        char why[300];
        if (!(self->pods = drv_prom_pods_start(pods, why, sizeof why))) {
            snprintf(err, errlen, "node %s: kubernetes_pods: %s", node->id, why);
            return -1;
        }
        const char *job = json_string_value(json_object_get(pods, "job"));
        self->pods_job = strdup(job ? job : "kubernetes-pods");
    }
    if (rc != 0) {
        snprintf(err, errlen, "node %s: out of memory", node->id);
        return -1;
    }
    return 0;
}

static void s_destroy(drv_node_t *node)
{
    prometheus_t *self = node->state;
    if (!self) {
        return;
    }
    for (size_t i = 0; i < self->count; i++) {
        if (self->targets[i].easy) {
            curl_multi_remove_handle(self->curl.multi, self->targets[i].easy);
            curl_easy_cleanup(self->targets[i].easy);
        }
        s_target_free(&self->targets[i]);
    }
    free(self->targets);
    drv_prom_pods_stop(&self->pods);
    free(self->pods_job);
    drv_curl_loop_fini(&self->curl);
    free(self);
}

const drv_node_kind_t drv_receiver_prometheus = {
    .schema = &drv_schema_receiver_prometheus,
    .init = s_init,
    .fd = s_fd,
    .readable = s_readable,
    .timeout_ms = s_timeout_ms,
    .drain = s_drain,
    .destroy = s_destroy,
};
