/*  drv_pod_cache — see drv_pod_cache.h. The watches' threads write, the
    instance's thread reads; one lock. Pods are keyed by uid, and by IP
    (the newest pod of an IP wins: pods of the host network share the
    node's and are not keyed by it). A relist marks what it did not name
    as deleted; a deleted pod is kept for the grace period, so that the
    last lines of a pod's log still find it. */
#include "drv_pod_cache.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <czmq.h>
#include <pthread.h>
#include <string.h>

typedef struct {
    drv_pod_t view;     // its strings point into strings, its maps are its own
    char *strings;      // the view's strings, one block
    int64_t deleted_ms; // mono, 0: alive
    bool named;         // named by the list being read
} pod_t;

enum { PODS, REPLICASETS, JOBS };

struct drv_pod_cache_t {
    pthread_mutex_t lock;
    int listed, watches; // of the watches, those that listed once
    bool pods_listed, replicasets_listed, jobs_listed;
    zhashx_t *by_uid; // uid -> pod_t (owned)
    zhashx_t *by_ip;  // ip -> pod_t (borrowed)
    zhashx_t *owners; // "ReplicaSet/ns/name" or "Job/ns/name" -> json_t the owner's controller reference
    int64_t grace_ms, max_pods, refused;
    int64_t versions; // each pod stored gets the next: a lookup's memo knows when it changed
    _Atomic int64_t changes;
    drv_kube_watch_t *watch[3];
    char *selector;
};

static const char *s_str(const json_t *object, const char *a, const char *b)
{
    return json_string_value(json_object_get(json_object_get(object, a), b));
}

//  The controller among an object's owners, or NULL.
static const json_t *s_controller(const json_t *object)
{
    size_t i;
    json_t *ref;
    json_array_foreach(json_object_get(json_object_get(object, "metadata"), "ownerReferences"), i, ref)
    {
        if (json_is_true(json_object_get(ref, "controller"))) {
            return ref;
        }
    }
    return NULL;
}

static void s_pod_free(void **item)
{
    pod_t *pod = *item;
    if (pod) {
        json_decref((json_t *)pod->view.labels);
        json_decref((json_t *)pod->view.annotations);
        json_decref((json_t *)pod->view.images);
        free(pod->strings);
        free(pod);
    }
    *item = NULL;
}

static void s_unkey_ip(drv_pod_cache_t *self, pod_t *pod)
{
    if (pod->view.ip && zhashx_lookup(self->by_ip, pod->view.ip) == pod) {
        zhashx_delete(self->by_ip, pod->view.ip);
    }
}

//  A map of strings of object (labels, annotations), copied; empty when none.
static json_t *s_strings(const json_t *map)
{
    json_t *copy = json_object();
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)map, key, value)
    {
        if (json_is_string(value)) {
            json_object_set(copy, key, value);
        }
    }
    return copy;
}

//  What a lookup needs of a pod, and nothing more: a pod as the API gives
//  it (its status, its managed fields) weighs many times that.
static pod_t *s_pod_new(const json_t *o, int64_t version)
{
    const json_t *owner = s_controller(o);
    bool host_network = json_is_true(json_object_get(json_object_get(o, "spec"), "hostNetwork"));
    const char *ip = host_network ? NULL : s_str(o, "status", "podIP");
    const char *fields[] = {s_str(o, "metadata", "uid"),
                            s_str(o, "metadata", "namespace"),
                            s_str(o, "metadata", "name"),
                            ip && *ip ? ip : NULL,
                            s_str(o, "spec", "nodeName"),
                            s_str(o, "status", "startTime"),
                            json_string_value(json_object_get(owner, "kind")),
                            json_string_value(json_object_get(owner, "name"))};
    enum { N = sizeof fields / sizeof *fields };
    size_t size = 0;
    for (int i = 0; i < N; i++) {
        size += fields[i] ? strlen(fields[i]) + 1 : 0;
    }
    pod_t *pod = calloc(1, sizeof *pod);
    pod->strings = malloc(size ? size : 1);
    const char *copies[N];
    char *at = pod->strings;
    for (int i = 0; i < N; i++) {
        copies[i] = fields[i] ? strcpy(at, fields[i]) : NULL;
        at += fields[i] ? strlen(fields[i]) + 1 : 0;
    }
    drv_pod_t *v = &pod->view;
    v->uid = copies[0];
    v->namespace_ = copies[1];
    v->name = copies[2];
    v->ip = copies[3];
    v->node = copies[4];
    v->start_time = copies[5];
    v->owner_kind = copies[6];
    v->owner_name = copies[7];
    v->version = version;
    const json_t *meta = json_object_get(o, "metadata");
    v->labels = s_strings(json_object_get(meta, "labels"));
    v->annotations = s_strings(json_object_get(meta, "annotations"));
    json_t *images = json_object();
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(o, "spec"), "containers"), i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        if (name && json_is_string(json_object_get(c, "image"))) {
            json_object_set(images, name, json_object_get(c, "image"));
        }
    }
    v->images = images;
    return pod;
}

//  Deleted pods past their grace go.
static void s_sweep(drv_pod_cache_t *self, int64_t now)
{
    zlistx_t *gone = zlistx_new();
    for (pod_t *pod = zhashx_first(self->by_uid); pod; pod = zhashx_next(self->by_uid)) {
        if (pod->deleted_ms && now - pod->deleted_ms >= self->grace_ms) {
            zlistx_add_end(gone, (void *)zhashx_cursor(self->by_uid));
        }
    }
    for (const char *uid = zlistx_first(gone); uid; uid = zlistx_next(gone)) {
        s_unkey_ip(self, zhashx_lookup(self->by_uid, uid));
        zhashx_delete(self->by_uid, uid);
    }
    zlistx_destroy(&gone);
}

//  A watch's first list ended (called locked).
static void s_listed(drv_pod_cache_t *self, bool *once)
{
    if (!*once) {
        *once = true;
        self->listed++;
    }
}

static void s_on_pod(void *arg, drv_kube_event_t event, const json_t *object)
{
    drv_pod_cache_t *self = arg;
    int64_t now = drv_time_mono_ms();
    pthread_mutex_lock(&self->lock);
    const char *uid = s_str(object, "metadata", "uid");
    pod_t *known = uid ? zhashx_lookup(self->by_uid, uid) : NULL;
    if (event == DRV_KUBE_LISTED) {
        for (pod_t *pod = zhashx_first(self->by_uid); pod; pod = zhashx_next(self->by_uid)) {
            pod->named = false;
        }
    } else if (event == DRV_KUBE_SYNCED) {
        s_listed(self, &self->pods_listed);
        for (pod_t *pod = zhashx_first(self->by_uid); pod; pod = zhashx_next(self->by_uid)) {
            pod->deleted_ms = pod->named || pod->deleted_ms ? pod->deleted_ms : now; // gone while not watched
        }
    } else if (event == DRV_KUBE_DELETED && known) {
        known->deleted_ms = known->deleted_ms ? known->deleted_ms : now;
    } else if (uid && event != DRV_KUBE_DELETED) {
        if (!known && (int64_t)zhashx_size(self->by_uid) >= self->max_pods) {
            s_sweep(self, now);
        }
        if (!known && (int64_t)zhashx_size(self->by_uid) >= self->max_pods) {
            if (self->refused++ % 1000 == 0) {
                drv_warn("kubernetes: pod not cached uid=%s reason=\"max_pods %lld reached\"", uid,
                         (long long)self->max_pods);
            }
        } else {
            if (known) {
                s_unkey_ip(self, known);
            }
            pod_t *pod = s_pod_new(object, ++self->versions);
            pod->named = true;
            zhashx_update(self->by_uid, uid, pod); // frees the one it replaces
            if (pod->view.ip) {
                zhashx_update(self->by_ip, pod->view.ip, pod);
            }
        }
    }
    if (event == DRV_KUBE_SYNCED || event == DRV_KUBE_DELETED) {
        s_sweep(self, now);
    }
    self->changes++;
    pthread_mutex_unlock(&self->lock);
}

//  ReplicaSets and Jobs: their own controller (a Deployment, a CronJob), by kind/namespace/name.
static void s_on_owner(drv_pod_cache_t *self, const char *kind, drv_kube_event_t event, const json_t *object,
                       bool *listed)
{
    char key[600];
    snprintf(key, sizeof key, "%s/%s/%s", kind, s_str(object, "metadata", "namespace") ?: "",
             s_str(object, "metadata", "name") ?: "");
    pthread_mutex_lock(&self->lock);
    const json_t *controller = object ? s_controller(object) : NULL;
    if (event == DRV_KUBE_SYNCED) {
        s_listed(self, listed);
    } else if (event == DRV_KUBE_DELETED || (object && !controller)) {
        zhashx_delete(self->owners, key);
    } else if (controller) {
        zhashx_update(self->owners, key, json_deep_copy(controller));
    }
    self->changes++;
    pthread_mutex_unlock(&self->lock);
}

static void s_on_replicaset(void *arg, drv_kube_event_t event, const json_t *object)
{
    drv_pod_cache_t *self = arg;
    s_on_owner(self, "ReplicaSet", event, object, &self->replicasets_listed);
}

static void s_on_job(void *arg, drv_kube_event_t event, const json_t *object)
{
    drv_pod_cache_t *self = arg;
    s_on_owner(self, "Job", event, object, &self->jobs_listed);
}

static void s_json_free(void **item)
{
    json_decref(*item);
    *item = NULL;
}

drv_pod_cache_t *drv_pod_cache_new(drv_kube_t *kube, const char *node, bool owners, int64_t grace_ms, int64_t max_pods)
{
    drv_pod_cache_t *self = calloc(1, sizeof *self);
    pthread_mutex_init(&self->lock, NULL);
    self->by_uid = zhashx_new();
    zhashx_set_destructor(self->by_uid, s_pod_free);
    self->by_ip = zhashx_new();
    self->owners = zhashx_new();
    zhashx_set_destructor(self->owners, s_json_free);
    self->grace_ms = grace_ms;
    self->max_pods = max_pods > 0 ? max_pods : INT64_MAX;
    if (node && *node) {
        self->selector = zsys_sprintf("spec.nodeName=%s", node);
    }
    self->watches = owners ? 3 : 1;
    self->watch[PODS] = drv_kube_watch_start(kube, "/api/v1/pods", self->selector, NULL, s_on_pod, self);
    if (owners) {
        self->watch[REPLICASETS] =
            drv_kube_watch_start(kube, "/apis/apps/v1/replicasets", NULL, NULL, s_on_replicaset, self);
        self->watch[JOBS] = drv_kube_watch_start(kube, "/apis/batch/v1/jobs", NULL, NULL, s_on_job, self);
    }
    return self;
}

void drv_pod_cache_destroy(drv_pod_cache_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_pod_cache_t *self = *self_p;
    for (int i = 0; i < 3; i++) {
        drv_kube_watch_stop(&self->watch[i]);
    }
    zhashx_destroy(&self->by_ip);
    zhashx_destroy(&self->by_uid);
    zhashx_destroy(&self->owners);
    zstr_free(&self->selector);
    pthread_mutex_destroy(&self->lock);
    free(self);
    *self_p = NULL;
}

//  The controller of the owner kind/name of namespace: its kind and name in *kind, *name.
static void s_top(drv_pod_cache_t *self, const char *namespace_, const char *kind, const char *name,
                  const char **top_kind, const char **top_name)
{
    *top_kind = *top_name = NULL;
    if (!kind || !name || (strcmp(kind, "ReplicaSet") && strcmp(kind, "Job"))) {
        return;
    }
    char key[600];
    snprintf(key, sizeof key, "%s/%s/%s", kind, namespace_ ? namespace_ : "", name);
    const json_t *ref = zhashx_lookup(self->owners, key);
    *top_kind = json_string_value(json_object_get(ref, "kind"));
    *top_name = json_string_value(json_object_get(ref, "name"));
}

bool drv_pod_cache_visit(drv_pod_cache_t *self, drv_pod_by_t by, const char *value, size_t len,
                         void (*visit)(void *arg, const drv_pod_t *pod), void *arg)
{
    char key[256];
    if (len == 0 || len >= sizeof key) {
        return false;
    }
    memcpy(key, value, len);
    key[len] = 0;
    pthread_mutex_lock(&self->lock);
    pod_t *pod = zhashx_lookup(by == DRV_POD_BY_UID ? self->by_uid : self->by_ip, key);
    if (pod) {
        drv_pod_t view = pod->view;
        s_top(self, view.namespace_, view.owner_kind, view.owner_name, &view.top_kind, &view.top_name);
        visit(arg, &view);
    }
    pthread_mutex_unlock(&self->lock);
    return pod != NULL;
}

int64_t drv_pod_cache_changes(drv_pod_cache_t *self)
{
    return self->changes;
}

bool drv_pod_cache_listed(drv_pod_cache_t *self)
{
    pthread_mutex_lock(&self->lock);
    bool listed = self->listed >= self->watches;
    pthread_mutex_unlock(&self->lock);
    return listed;
}

void drv_pod_cache_stats(drv_pod_cache_t *self, drv_pod_cache_stats_t *out)
{
    *out = (drv_pod_cache_stats_t){0};
    pthread_mutex_lock(&self->lock);
    for (pod_t *pod = zhashx_first(self->by_uid); pod; pod = zhashx_next(self->by_uid)) {
        out->pods += !pod->deleted_ms;
        out->deleted_pods += pod->deleted_ms != 0;
    }
    for (const char *key = zhashx_first(self->owners) ? zhashx_cursor(self->owners) : NULL; key;
         key = zhashx_next(self->owners) ? zhashx_cursor(self->owners) : NULL) {
        out->replicasets += !strncmp(key, "ReplicaSet/", 11);
        out->jobs += !strncmp(key, "Job/", 4);
    }
    out->pods_refused = self->refused;
    pthread_mutex_unlock(&self->lock);
    for (int i = 0; i < 3; i++) {
        if (self->watch[i]) {
            drv_kube_watch_stats(self->watch[i], &out->watch[i]);
        }
    }
}
