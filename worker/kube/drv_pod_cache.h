/*  drv_pod_cache — what the Kubernetes API says of the pods a
    processor:kubernetes enriches records with (docs/kubernetes.md): pods
    (of one node, or all), and the ReplicaSets and Jobs that name their
    Deployments and CronJobs, each kept current by a watch
    (drover/drv_kube.h) in its own thread. Records never wait for it: a
    lookup finds what is known now, under a lock held for the lookup alone. */
#ifndef DRV_POD_CACHE_H
#define DRV_POD_CACHE_H

#include "drover/drv_kube.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct drv_pod_cache_t drv_pod_cache_t;

//  A pod as a lookup sees it (borrowed: valid during the visit only).
typedef struct {
    const char *uid, *namespace_, *name, *ip, *node, *start_time; // start_time: RFC 3339, or NULL
    //  The controller that owns it, and the one owning that (a ReplicaSet's
    //  Deployment, a Job's CronJob), as far as known: kind and name, or NULL.
    const char *owner_kind, *owner_name, *top_kind, *top_name;
    const json_t *labels, *annotations; // objects of strings (maybe empty)
    const json_t *images;               // container name -> image
    //  Another each time the pod is stored (a change, or a deleted pod's
    //  owners found since): what was made of a version may be kept.
    int64_t version;
} drv_pod_t;

typedef struct {
    int64_t pods, deleted_pods, replicasets, jobs;
    int64_t pods_refused;            // not cached: max_pods reached
    drv_kube_watch_stats_t watch[3]; // pods, replicasets, jobs
} drv_pod_cache_stats_t;

//  Watches the pods of node ("" or NULL: every node) and, with owners, the
//  ReplicaSets and Jobs; a deleted pod is kept grace_ms; at most max_pods.
drv_pod_cache_t *drv_pod_cache_new(drv_kube_t *kube, const char *node, bool owners, int64_t grace_ms, int64_t max_pods);
void drv_pod_cache_destroy(drv_pod_cache_t **self_p);

typedef enum { DRV_POD_BY_UID, DRV_POD_BY_IP } drv_pod_by_t;

//  Finds the pod whose uid (or IP) is value and calls visit with it;
//  false when none is known.
bool drv_pod_cache_visit(drv_pod_cache_t *self, drv_pod_by_t by, const char *value, size_t len,
                         void (*visit)(void *arg, const drv_pod_t *pod), void *arg);

//  Grows with every change the watches make: a lookup's answer holds while
//  it stays the same (read without the lock).
int64_t drv_pod_cache_changes(drv_pod_cache_t *self);

//  True once the pods (and the owners) were listed.
bool drv_pod_cache_listed(drv_pod_cache_t *self);

void drv_pod_cache_stats(drv_pod_cache_t *self, drv_pod_cache_stats_t *out);

#endif
