/*  drv_pod_memo — what processor:kubernetes made of a pod for a record
    (the attributes it adds, as msgpack pairs), kept per pod and container
    until the pod changes (its version, or the owner above it), so that a
    record costs a lookup and a merge, not a rebuild (docs/kubernetes.md,
    B30 in docs/benchmarks.md). Touched by the instance's thread alone. */
#ifndef DRV_POD_MEMO_H
#define DRV_POD_MEMO_H

#include "drv_pod_cache.h"

#include <msgpack.h>
#include <stddef.h>

typedef struct drv_pod_memo_t drv_pod_memo_t;

typedef struct {
    const msgpack_object_kv *kv;
    size_t count;
} drv_pod_attrs_t;

//  At most max_entries kept (past it, all are let go and made again).
drv_pod_memo_t *drv_pod_memo_new(size_t max_entries);
void drv_pod_memo_destroy(drv_pod_memo_t **self_p);
//  What was made of this version of pod for container (len bytes), or NULL.
const drv_pod_attrs_t *drv_pod_memo_find(drv_pod_memo_t *self, const drv_pod_t *pod, const char *container, size_t len);
//  Keeps a copy of kv as what was made of pod for container; returns it.
const drv_pod_attrs_t *drv_pod_memo_keep(drv_pod_memo_t *self, const drv_pod_t *pod, const char *container, size_t len,
                                         const msgpack_object_kv *kv, size_t count);
//  Frees what was replaced since the last call: call once no record points
//  into it (the batch that used it has been handed on).
void drv_pod_memo_collect(drv_pod_memo_t *self);

#endif
