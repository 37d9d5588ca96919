/*  drv_prom_pods — the pods of this node annotated for scraping
    (drv_prom_pods.h), as Prometheus' usual kubernetes-pods job finds
    them: prometheus.io/scrape "true", the port from prometheus.io/port
    (else the pod's first declared container port), the path from
    prometheus.io/path (/metrics) and the scheme from prometheus.io/scheme
    (http), at the pod's IP while it runs. A watch of the node's pods (the
    Kubernetes client of common/drv_kube) keeps them in a thread of its
    own; the receiver takes the list when it changed. */
#include "drv_prom_pods.h"

#include "drover/drv_kube.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct drv_prom_pods_t {
    drv_kube_t *kube;
    drv_kube_watch_t *watch;
    pthread_mutex_t lock; // guards what follows
    json_t *targets;      // pod uid -> {url, namespace, pod}
    json_t *listing;      // uids named since a list began, or NULL
    int64_t version;      // bumped at each change
};

static const char *s_text(const json_t *object, const char *key)
{
    return json_string_value(json_object_get(object, key));
}

//  The pod's target ({url, namespace, pod}), or NULL when it is not one.
static json_t *s_target(const json_t *pod)
{
    const json_t *meta = json_object_get(pod, "metadata");
    const json_t *annotations = json_object_get(meta, "annotations");
    const json_t *status = json_object_get(pod, "status");
    const char *ip = s_text(status, "podIP"), *phase = s_text(status, "phase");
    const char *scrape = s_text(annotations, "prometheus.io/scrape");
    if (!scrape || strcmp(scrape, "true") || !ip || !*ip || (phase && strcmp(phase, "Running"))) {
        return NULL;
    }
    char port[16] = "";
    const char *given = s_text(annotations, "prometheus.io/port");
    if (given && strlen(given) < sizeof port && strspn(given, "0123456789") == strlen(given) && *given) {
        snprintf(port, sizeof port, "%s", given);
    } else {
        const json_t *containers = json_object_get(json_object_get(pod, "spec"), "containers");
        const json_t *ports = json_object_get(json_array_get(containers, 0), "ports");
        json_int_t first = json_integer_value(json_object_get(json_array_get(ports, 0), "containerPort"));
        if (first > 0 && first < 65536) {
            snprintf(port, sizeof port, "%lld", (long long)first);
        }
    }
    const char *path = s_text(annotations, "prometheus.io/path");
    const char *scheme = s_text(annotations, "prometheus.io/scheme");
    path = path && path[0] == '/' && !strpbrk(path, " \t\r\n") ? path : "/metrics";
    scheme = scheme && !strcmp(scheme, "https") ? "https" : "http";
    if (!port[0]) {
        return NULL;
    }
    char url[2300];
    snprintf(url, sizeof url, strchr(ip, ':') ? "%s://[%s]:%s%.2048s" : "%s://%s:%s%.2048s", scheme, ip, port, path);
    return json_pack("{s:s, s:s, s:s}", "url", url, "namespace", s_text(meta, "namespace") ?: "", "pod",
                     s_text(meta, "name") ?: "");
}

static void s_on_event(void *arg, drv_kube_event_t event, const json_t *pod)
{
    drv_prom_pods_t *self = arg;
    const char *uid = s_text(json_object_get(pod, "metadata"), "uid");
    pthread_mutex_lock(&self->lock);
    if (event == DRV_KUBE_LISTED) {
        json_decref(self->listing);
        self->listing = json_object();
    } else if (event == DRV_KUBE_SYNCED && self->listing) {
        const char *key;
        json_t *value;
        void *tmp;
        json_object_foreach_safe(self->targets, tmp, key, value)
        {
            if (!json_object_get(self->listing, key)) {
                json_object_del(self->targets, key);
                self->version++;
            }
        }
        json_decref(self->listing);
        self->listing = NULL;
    } else if (uid && (event == DRV_KUBE_ADDED || event == DRV_KUBE_MODIFIED)) {
        json_t *target = s_target(pod);
        json_t *before = json_object_get(self->targets, uid);
        if (self->listing) {
            json_object_set_new(self->listing, uid, json_true());
        }
        if (target && !json_equal(target, before)) {
            json_object_set_new(self->targets, uid, target);
            self->version++;
        } else if (!target && before) {
            json_object_del(self->targets, uid);
            self->version++;
        } else {
            json_decref(target);
        }
    } else if (uid && event == DRV_KUBE_DELETED && json_object_get(self->targets, uid)) {
        json_object_del(self->targets, uid);
        self->version++;
    }
    pthread_mutex_unlock(&self->lock);
}

drv_prom_pods_t *drv_prom_pods_start(const json_t *config, char *err, size_t errlen)
{
    const json_t *api = json_object_get(config, "api");
    drv_kube_config_t settings = {
        .server = s_text(api, "server"), .token_file = s_text(api, "token_file"), .ca_file = s_text(api, "ca_file")};
    drv_kube_t *kube = drv_kube_new(&settings, err, errlen);
    if (!kube) {
        return NULL;
    }
    drv_prom_pods_t *self = calloc(1, sizeof *self);
    self->kube = kube;
    self->targets = json_object();
    pthread_mutex_init(&self->lock, NULL);
    const char *node = s_text(config, "node");
    char selector[300] = "";
    if (node && *node) {
        snprintf(selector, sizeof selector, "spec.nodeName=%s", node);
    }
    self->watch = drv_kube_watch_start(kube, "/api/v1/pods", selector, NULL, s_on_event, self);
    return self;
}

void drv_prom_pods_stop(drv_prom_pods_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_prom_pods_t *self = *self_p;
    drv_kube_watch_stop(&self->watch);
    drv_kube_destroy(&self->kube);
    pthread_mutex_destroy(&self->lock);
    json_decref(self->targets);
    json_decref(self->listing);
    free(self);
    *self_p = NULL;
}

json_t *drv_prom_pods_targets(drv_prom_pods_t *self, int64_t *version)
{
    pthread_mutex_lock(&self->lock);
    json_t *list = json_array();
    const char *uid;
    json_t *target;
    json_object_foreach(self->targets, uid, target)
    {
        json_array_append_new(list, json_deep_copy(target));
    }
    *version = self->version;
    pthread_mutex_unlock(&self->lock);
    return list;
}

int64_t drv_prom_pods_version(drv_prom_pods_t *self)
{
    pthread_mutex_lock(&self->lock);
    int64_t version = self->version;
    pthread_mutex_unlock(&self->lock);
    return version;
}
