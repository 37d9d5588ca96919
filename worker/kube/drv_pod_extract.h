/*  drv_pod_extract — what processor:kubernetes's extract says to take of
    a pod (docs/kubernetes.md): the metadata attributes, the owners, the
    container's image, labels and annotations by key or regex, as the
    msgpack pairs a record's resource gets. */
#ifndef DRV_POD_EXTRACT_H
#define DRV_POD_EXTRACT_H

#include "drv_pod_cache.h"

#include <jansson.h>
#include <msgpack.h>

typedef struct drv_pod_extract_t drv_pod_extract_t;

//  The extract map of a normalized config; NULL with err.
drv_pod_extract_t *drv_pod_extract_new(const json_t *extract, char *err, size_t errlen);
void drv_pod_extract_destroy(drv_pod_extract_t **self_p);
//  True when a Deployment's or a CronJob's name is taken: the ReplicaSets
//  and Jobs that name them must be watched.
bool drv_pod_extract_owners(const drv_pod_extract_t *self);
//  What pod adds to a record of container (len bytes; NULL: none said):
//  at most max pairs into out, strings made in zone. Their count.
size_t drv_pod_extract(drv_pod_extract_t *self, const drv_pod_t *pod, const char *container, size_t len,
                       msgpack_zone *zone, msgpack_object_kv *out, size_t max);

#endif
