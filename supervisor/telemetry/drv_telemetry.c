/*  drv_telemetry — see drv_telemetry.h. */
#include "drv_telemetry.h"
#include "drv_metrics.h"
#include "drv_telemetry_otlp.h"

#include "drover/drv_curl_loop.h"
#include "drover/drv_log.h"
#include "drover/drv_secret.h"
#include "drover/drv_time.h"
#include "drover/drv_version.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOGS_EVERY_MS 1000
#define LOGS_PER_REQUEST 1000
#define TIMEOUT_MS 10000
#define RETRY_MAX_MS 30000
#define WARN_EVERY_MS 60000

enum { METRICS, LOGS };
static const char *const s_paths[2][2] = {
    {"/v1/metrics", "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"},
    {"/v1/logs", "/opentelemetry.proto.collector.logs.v1.LogsService/Export"}};

//  One request of a signal: its body kept until it is taken (logs: sent
//  again after a failure; metrics: the next interval's replaces it).
typedef struct {
    CURL *easy;
    struct curl_slist *headers;
    uint8_t *body;
    size_t len;
    char grpc_status[16]; // the answer's grpc-status ("" before one)
    int64_t due_ms;       // the next send
    int64_t backoff_ms;
} request_t;

struct drv_telemetry_t {
    drv_engine_t *engine;
    const json_t *config;
    drv_curl_loop_t curl;
    bool grpc;
    char urls[2][2300];
    char instance_id[40], host[256], pod[256], node[256];
    drv_telemetry_attr_t resource[6];
    size_t attrs;
    request_t requests[2];
    drv_telemetry_line_t *queue; // a ring of cap lines
    size_t cap, head, count;
    int64_t last_warn_ms;
};

static void s_sink(void *arg, int level, int64_t wall_ms, const char *message, size_t len)
{
    drv_telemetry_t *self = arg;
    if (self->count == self->cap) { // full: the oldest goes, counted
        free(self->queue[self->head].message);
        self->head = (self->head + 1) % self->cap;
        self->count--;
        self->engine->telemetry_dropped_logs++;
    }
    char *copy = strndup(message, len);
    if (copy) {
        self->queue[(self->head + self->count++) % self->cap] = (drv_telemetry_line_t){wall_ms, level, copy};
    }
}

static void s_uuid(char *out, size_t size)
{
    unsigned char b[16] = {0};
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, b, sizeof b) : -1;
    if (fd >= 0) {
        close(fd);
    }
    if (got != (ssize_t)sizeof b) {
        uint64_t t = (uint64_t)drv_time_mono_us() ^ (uint64_t)getpid() << 32;
        memcpy(b, &t, sizeof t);
    }
    b[6] = (b[6] & 0x0f) | 0x40, b[8] = (b[8] & 0x3f) | 0x80; // version 4, RFC 4122 variant
    snprintf(out, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
             b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static void s_add(drv_telemetry_t *self, const char *key, const char *value)
{
    if (value && value[0]) {
        self->resource[self->attrs++] = (drv_telemetry_attr_t){key, value};
    }
}

drv_telemetry_t *drv_telemetry_new(drv_engine_t *engine, char *err, size_t errlen)
{
    err[0] = 0;
    const json_t *config = engine->config->telemetry;
    if (!config) {
        return NULL;
    }
    drv_telemetry_t *self = calloc(1, sizeof *self);
    size_t cap = (size_t)json_integer_value(json_object_get(config, "max_queued_logs"));
    if (self) {
        self->queue = calloc(cap ? cap : 1, sizeof *self->queue);
    }
    if (!self || !self->queue || drv_curl_loop_init(&self->curl) != 0) {
        snprintf(err, errlen, "engine.telemetry: out of memory or descriptors");
        drv_telemetry_destroy(&self);
        return NULL;
    }
    self->engine = engine, self->config = config, self->cap = cap;
    self->grpc = !strcmp(json_string_value(json_object_get(config, "protocol")), "grpc");
    const char *endpoint = json_string_value(json_object_get(config, "endpoint"));
    size_t base = strlen(endpoint);
    while (base > 0 && endpoint[base - 1] == '/') {
        base--;
    }
    for (int s = METRICS; s <= LOGS; s++) {
        snprintf(self->urls[s], sizeof self->urls[s], "%.*s%s", (int)base, endpoint, s_paths[s][self->grpc]);
        self->requests[s].backoff_ms = 1000;
        self->requests[s].due_ms = drv_time_mono_ms() + (s == LOGS ? LOGS_EVERY_MS : 1000);
    }
    s_uuid(self->instance_id, sizeof self->instance_id);
    gethostname(self->host, sizeof self->host - 1);
    const char *pod = getenv("POD_NAME") ? getenv("POD_NAME") : getenv("K8S_POD_NAME");
    const char *node = getenv("NODE_NAME") ? getenv("NODE_NAME") : getenv("K8S_NODE_NAME");
    snprintf(self->pod, sizeof self->pod, "%s", pod ? pod : "");
    snprintf(self->node, sizeof self->node, "%s", node ? node : "");
    s_add(self, "service.name", "drover");
    s_add(self, "service.instance.id", self->instance_id);
    s_add(self, "service.version", drv_version());
    s_add(self, "host.name", self->host);
    s_add(self, "k8s.pod.name", self->pod);
    s_add(self, "k8s.node.name", self->node);
    if (json_is_true(json_object_get(config, "logs"))) {
        drv_log_sink(s_sink, self);
    }
    drv_info("telemetry pushed endpoint=%s protocol=%s interval_secs=%lld", endpoint, self->grpc ? "grpc" : "http",
             (long long)json_integer_value(json_object_get(config, "interval_secs")));
    return self;
}

static void s_stop(drv_telemetry_t *self, request_t *r)
{
    if (r->easy) {
        curl_multi_remove_handle(self->curl.multi, r->easy);
        curl_easy_cleanup(r->easy);
        r->easy = NULL;
    }
    curl_slist_free_all(r->headers);
    r->headers = NULL;
}

void drv_telemetry_destroy(drv_telemetry_t **self_p)
{
    drv_telemetry_t *self = *self_p;
    if (!self) {
        return;
    }
    drv_log_sink(NULL, NULL);
    for (int s = METRICS; s <= LOGS; s++) {
        s_stop(self, &self->requests[s]);
        free(self->requests[s].body);
    }
    for (size_t i = 0; i < self->count; i++) {
        free(self->queue[(self->head + i) % self->cap].message);
    }
    free(self->queue);
    drv_curl_loop_fini(&self->curl);
    free(self);
    *self_p = NULL;
}

int drv_telemetry_fd(const drv_telemetry_t *self)
{
    return self ? self->curl.epoll_fd : -1;
}

static size_t s_header(char *data, size_t size, size_t n, void *arg)
{
    request_t *r = arg;
    size_t len = size * n;
    if (len > 12 && !strncasecmp(data, "grpc-status:", 12)) {
        snprintf(r->grpc_status, sizeof r->grpc_status, "%.*s", (int)strcspn(data + 12, "\r\n"), data + 12);
    }
    return len;
}

static size_t s_discard(char *data, size_t size, size_t n, void *arg)
{
    (void)data, (void)arg;
    return size * n;
}

//  Posts the request's body (framed for gRPC). 0, or -1.
static int s_post(drv_telemetry_t *self, int signal)
{
    request_t *r = &self->requests[signal];
    r->headers =
        curl_slist_append(NULL, self->grpc ? "Content-Type: application/grpc" : "Content-Type: application/x-protobuf");
    if (self->grpc) {
        r->headers = curl_slist_append(r->headers, "TE: trailers");
    }
    char agent[80];
    snprintf(agent, sizeof agent, "User-Agent: drover/%s", drv_version());
    r->headers = curl_slist_append(r->headers, agent);
    const char *name;
    json_t *value;
    json_object_foreach(json_object_get(self->config, "headers"), name, value)
    {
        char err[200];
        char *resolved = drv_secret_resolve(json_string_value(value), err, sizeof err);
        char *line = NULL;
        if (resolved && asprintf(&line, "%s: %s", name, resolved) >= 0) {
            r->headers = curl_slist_append(r->headers, line);
        }
        free(line);
        free(resolved);
    }
    r->easy = curl_easy_init();
    if (!r->easy || !r->headers) {
        s_stop(self, r);
        return -1;
    }
    r->grpc_status[0] = 0;
    curl_easy_setopt(r->easy, CURLOPT_URL, self->urls[signal]);
    curl_easy_setopt(r->easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
    curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, (long)TIMEOUT_MS);
    curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, s_discard);
    curl_easy_setopt(r->easy, CURLOPT_HEADERFUNCTION, s_header);
    curl_easy_setopt(r->easy, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(r->easy, CURLOPT_PRIVATE, (char *)r);
    if (self->grpc) {
        curl_easy_setopt(r->easy, CURLOPT_HTTP_VERSION,
                         strncmp(self->urls[signal], "https:", 6) ? (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
                                                                  : (long)CURL_HTTP_VERSION_2TLS);
    }
    curl_multi_add_handle(self->curl.multi, r->easy);
    return 0;
}

//  A packed message as the body of the signal's request (gRPC: framed).
static int s_body(drv_telemetry_t *self, int signal, uint8_t *message, size_t len)
{
    request_t *r = &self->requests[signal];
    free(r->body);
    r->body = message, r->len = len;
    if (self->grpc) {
        uint8_t *framed = malloc(len + 5);
        if (!framed) {
            return -1;
        }
        framed[0] = 0;
        framed[1] = (uint8_t)(len >> 24), framed[2] = (uint8_t)(len >> 16), framed[3] = (uint8_t)(len >> 8);
        framed[4] = (uint8_t)len;
        memcpy(framed + 5, message, len);
        free(message);
        r->body = framed, r->len = len + 5;
    }
    return 0;
}

static int s_send_metrics(drv_telemetry_t *self)
{
    char *text = drv_metrics_render(self->engine);
    uint8_t *message = NULL;
    size_t len = 0;
    uint64_t now = (uint64_t)drv_time_wall_ms() * 1000000u;
    int rc = text ? drv_telemetry_metrics(text, self->resource, self->attrs,
                                          (uint64_t)self->engine->started_at * 1000000u, now, &message, &len)
                  : -1;
    free(text);
    return rc == 0 && s_body(self, METRICS, message, len) == 0 ? s_post(self, METRICS) : -1;
}

static int s_send_logs(drv_telemetry_t *self)
{
    request_t *r = &self->requests[LOGS];
    if (!r->body) { // else the one that failed goes again
        size_t n = self->count < LOGS_PER_REQUEST ? self->count : LOGS_PER_REQUEST;
        if (n == 0) {
            return 0;
        }
        drv_telemetry_line_t lines[LOGS_PER_REQUEST];
        for (size_t i = 0; i < n; i++) {
            lines[i] = self->queue[(self->head + i) % self->cap];
        }
        uint8_t *message = NULL;
        size_t len = 0;
        if (drv_telemetry_logs(lines, n, self->resource, self->attrs, &message, &len) != 0 ||
            s_body(self, LOGS, message, len) != 0) {
            return -1;
        }
        for (size_t i = 0; i < n; i++) { // in the body now: out of the queue
            free(lines[i].message);
        }
        self->head = (self->head + n) % self->cap;
        self->count -= n;
    }
    return s_post(self, LOGS);
}

//  A request finished: taken (its body goes), or failed (logs: sent again
//  after a backoff; metrics: the next interval's replace it).
static void s_finished(drv_telemetry_t *self, request_t *r, CURLcode result)
{
    long status = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    s_stop(self, r);
    int signal = r == &self->requests[LOGS] ? LOGS : METRICS;
    bool taken = result == CURLE_OK && status >= 200 && status < 300 &&
                 (!self->grpc || !strcmp(r->grpc_status, "0") || !strcmp(r->grpc_status, " 0"));
    int64_t now = drv_time_mono_ms();
    if (taken || signal == METRICS) {
        free(r->body);
        r->body = NULL, r->len = 0;
    }
    if (taken) {
        r->backoff_ms = 1000;
        self->engine->telemetry_sent[signal]++;
        return;
    }
    self->engine->telemetry_failures++;
    if (signal == LOGS) {
        r->due_ms = now + r->backoff_ms;
    }
    r->backoff_ms = r->backoff_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : r->backoff_ms * 2;
    if (now - self->last_warn_ms >= WARN_EVERY_MS) { // a line the sink does not take: no loop
        self->last_warn_ms = now;
        drv_warn("telemetry not taken url=%s reason=\"%s%s%ld%s%s\" dropped_logs=%lld", self->urls[signal],
                 result != CURLE_OK ? curl_easy_strerror(result) : "", result != CURLE_OK ? "" : "HTTP ", status,
                 r->grpc_status[0] ? " grpc-status" : "", r->grpc_status,
                 (long long)self->engine->telemetry_dropped_logs);
    }
}

int64_t drv_telemetry_tick(drv_telemetry_t *self)
{
    if (!self) {
        return -1;
    }
    drv_curl_loop_run(&self->curl);
    CURLMsg *message;
    int left;
    while ((message = curl_multi_info_read(self->curl.multi, &left))) {
        if (message->msg == CURLMSG_DONE) {
            request_t *r = NULL;
            curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&r);
            s_finished(self, r, message->data.result);
        }
    }
    int64_t now = drv_time_mono_ms();
    int64_t interval = json_integer_value(json_object_get(self->config, "interval_secs")) * 1000;
    request_t *m = &self->requests[METRICS], *l = &self->requests[LOGS];
    if (!m->easy && now >= m->due_ms && json_is_true(json_object_get(self->config, "metrics"))) {
        m->due_ms = now + interval;
        s_send_metrics(self);
    }
    if (!l->easy && now >= l->due_ms && json_is_true(json_object_get(self->config, "logs"))) {
        l->due_ms = now + LOGS_EVERY_MS;
        s_send_logs(self);
    }
    int64_t due = m->due_ms < l->due_ms ? m->due_ms : l->due_ms;
    if (self->curl.due_ms >= 0 && self->curl.due_ms < due) {
        due = self->curl.due_ms;
    }
    return due > now ? due - now : 0;
}
