/*  drv_kube_report — see drv_kube_report.h. */
#include "drv_kube_report.h"

#include "drover/drv_log.h"
#include "drover/drv_thread.h"
#include "drover/drv_time.h"
#include "drover/drv_utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_MIN_MS 500
#define RETRY_MAX_MS 30000
#define EVENTS_MAX 1000 // queued and not sent: more are dropped (the API is away)
#define WARN_EVERY_MS 10000

struct drv_kube_report_t {
    drv_kube_t *kube;
    char engine[256];
    drv_thread_t thread; // its lock guards what follows
    json_t *statuses;    // "namespace/name" -> {path, body, due_ms}: not written yet
    json_t *events;      // [{path, body}]: not sent yet, oldest first
    int64_t status_failures, event_failures;
    //  The thread's own.
    int64_t backoff_ms;
    int64_t warned_ms;
};

static void s_warn(drv_kube_report_t *self, const char *what, const char *path, int status, const char *err)
{
    int64_t now = drv_time_mono_ms();
    if (now - self->warned_ms >= WARN_EVERY_MS) {
        self->warned_ms = now;
        drv_warn("kubernetes: %s failed path=%s status=%d reason=\"%s\"", what, path, status, err);
    }
}

//  Sends one request: true when the API took it; *retry when trying again may help.
static bool s_send(drv_kube_report_t *self, const char *method, const char *path, const char *type, const json_t *body,
                   bool *retry)
{
    char err[300] = "";
    json_t *answer = NULL;
    int status = drv_kube_request(self->kube, method, path, type, body, &answer, err, sizeof err);
    bool ok = status >= 200 && status < 300;
    if (!ok) {
        const char *message = json_string_value(json_object_get(answer, "message"));
        s_warn(self, !strcmp(method, "PATCH") ? "status write" : "event", path, status, message ? message : err);
    }
    json_decref(answer);
    *retry = status == 0 || status == 429 || status >= 500; // 403 (RBAC), 404 (gone), 422: as good as never
    return ok;
}

//  The status whose time has come (removed, key in key), or NULL; *wait_ms
//  until the next one's time (-1: none waits).
static json_t *s_due(drv_kube_report_t *self, int64_t now, char *key, size_t keylen, int64_t *wait_ms)
{
    const char *k;
    json_t *item;
    *wait_ms = -1;
    json_object_foreach(self->statuses, k, item)
    {
        int64_t due = json_integer_value(json_object_get(item, "due_ms"));
        if (due <= now) {
            snprintf(key, keylen, "%s", k);
            json_incref(item);
            json_object_del(self->statuses, k);
            return item;
        }
        *wait_ms = *wait_ms < 0 || due - now < *wait_ms ? due - now : *wait_ms;
    }
    return NULL;
}

static void *s_run(void *arg)
{
    drv_kube_report_t *self = arg;
    self->backoff_ms = RETRY_MIN_MS;
    pthread_mutex_lock(&self->thread.lock);
    while (!self->thread.stop) {
        char key[600];
        int64_t wait_ms;
        json_t *event = json_array_size(self->events) ? json_incref(json_array_get(self->events, 0)) : NULL;
        json_t *status = event ? NULL : s_due(self, drv_time_mono_ms(), key, sizeof key, &wait_ms);
        if (event) {
            json_array_remove(self->events, 0);
        } else if (!status) {
            drv_thread_wait(&self->thread, wait_ms);
            continue;
        }
        pthread_mutex_unlock(&self->thread.lock);
        json_t *item = event ? event : status;
        const char *path = json_string_value(json_object_get(item, "path"));
        bool retry;
        bool ok =
            event ? s_send(self, "POST", path, "application/json", json_object_get(item, "body"), &retry)
                  : s_send(self, "PATCH", path, "application/merge-patch+json", json_object_get(item, "body"), &retry);
        self->backoff_ms = ok ? RETRY_MIN_MS : self->backoff_ms;
        pthread_mutex_lock(&self->thread.lock);
        if (!ok && event) {
            self->event_failures++;
        } else if (!ok) {
            self->status_failures++;
            if (retry && !json_object_get(self->statuses, key)) { // none newer came meanwhile
                json_object_set_new(status, "due_ms", json_integer(drv_time_mono_ms() + self->backoff_ms));
                json_object_set(self->statuses, key, status);
                self->backoff_ms = self->backoff_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : self->backoff_ms * 2;
            }
        }
        json_decref(item);
    }
    pthread_mutex_unlock(&self->thread.lock);
    return NULL;
}

drv_kube_report_t *drv_kube_report_new(drv_kube_t *kube, const char *engine)
{
    drv_kube_report_t *self = calloc(1, sizeof *self);
    self->kube = kube;
    snprintf(self->engine, sizeof self->engine, "%s", engine);
    self->statuses = json_object();
    self->events = json_array();
    drv_thread_start(&self->thread, s_run, self); // without one, nothing is reported (statuses wait)
    return self;
}

void drv_kube_report_destroy(drv_kube_report_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_kube_report_t *self = *self_p;
    drv_thread_stop(&self->thread);
    json_decref(self->statuses);
    json_decref(self->events);
    free(self);
    *self_p = NULL;
}

void drv_kube_report_status(drv_kube_report_t *self, const char *namespace, const char *name, json_t *entry)
{
    char key[600], path[800];
    snprintf(key, sizeof key, "%s/%s", namespace, name);
    snprintf(path, sizeof path, "/apis/drover.dev/v1alpha1/namespaces/%s/droverpipelines/%s/status", namespace, name);
    json_t *body = json_pack("{s:{s:{s:o}}}", "status", "engines", self->engine, entry);
    pthread_mutex_lock(&self->thread.lock);
    json_object_set_new(self->statuses, key, json_pack("{s:s, s:o, s:I}", "path", path, "body", body, "due_ms", 0));
    pthread_cond_signal(&self->thread.wake);
    pthread_mutex_unlock(&self->thread.lock);
}

void drv_kube_report_event(drv_kube_report_t *self, const json_t *object, const char *type, const char *reason,
                           const char *message)
{
    const json_t *meta = json_object_get(object, "metadata");
    const char *namespace = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!namespace || !name) {
        return;
    }
    static unsigned counter;
    char stamp[40], event_name[300], path[400];
    int64_t now = drv_time_wall_ms();
    drv_time_rfc3339(now, stamp, sizeof stamp);
    //  As client-go's recorder names them: the object's name and a unique suffix.
    snprintf(event_name, sizeof event_name, "%.200s.%llx%04x", name, (unsigned long long)now, ++counter & 0xffff);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/events", namespace);
    char text[1024];
    drv_utf8_snprintf(text, sizeof text, "%s", message);
    json_t *body = json_pack(
        "{s:s, s:s, s:{s:s, s:s}, s:{s:O?, s:O?, s:s, s:s, s:O?, s:O?}, s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:s, "
        "s:s, s:s, s:i}",
        "apiVersion", "v1", "kind", "Event", "metadata", "name", event_name, "namespace", namespace, "involvedObject",
        "apiVersion", json_object_get(object, "apiVersion"), "kind", json_object_get(object, "kind"), "name", name,
        "namespace", namespace, "uid", json_object_get(meta, "uid"), "resourceVersion",
        json_object_get(meta, "resourceVersion"), "reason", reason, "message", text, "type", type, "source",
        "component", "droverd", "host", self->engine, "reportingComponent", "drover.dev/droverd", "reportingInstance",
        self->engine, "firstTimestamp", stamp, "lastTimestamp", stamp, "count", 1);
    pthread_mutex_lock(&self->thread.lock);
    if (json_array_size(self->events) < EVENTS_MAX) {
        json_array_append_new(self->events, json_pack("{s:s, s:o}", "path", path, "body", body));
        pthread_cond_signal(&self->thread.wake);
    } else {
        self->event_failures++;
        json_decref(body);
    }
    pthread_mutex_unlock(&self->thread.lock);
}

void drv_kube_report_failures(drv_kube_report_t *self, int64_t *statuses, int64_t *events)
{
    pthread_mutex_lock(&self->thread.lock);
    *statuses = self->status_failures;
    *events = self->event_failures;
    pthread_mutex_unlock(&self->thread.lock);
}
