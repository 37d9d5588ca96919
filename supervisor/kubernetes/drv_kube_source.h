/*  drv_kube_source — DroverPipeline resources as a source of pipelines
    (docs/kubernetes.md, "Pipelines as Kubernetes resources";
    engine.kubernetes): a watch keeps what the API holds current in a
    thread of its own, and droverd's loop converges on it, level-driven:
    a resource created or whose spec changed becomes a create or replace
    through the same operations as a PUT (source and cause kubernetes,
    canary policies apply), a resource gone shuts its pipeline down. The
    outcome goes back to each resource's status, and rollouts become
    Events (drv_kube_report.h). */
#ifndef DRV_KUBE_SOURCE_H
#define DRV_KUBE_SOURCE_H

#include "drv_engine.h"

typedef struct drv_kube_source_t drv_kube_source_t;

//  The source engine.kubernetes asks for, watching; NULL when it asks for
//  none (err "") or it cannot be set up (the reason in err).
drv_kube_source_t *drv_kube_source_new(drv_engine_t *engine, char *err, size_t errlen);
void drv_kube_source_destroy(drv_kube_source_t **self_p);
//  Readable when the watch brought news (-1 without a source).
int drv_kube_source_fd(drv_kube_source_t *self);
//  Converges on what the API holds, when it changed or a retry is due;
//  ms until it wants to look again (-1: only when the descriptor says so).
int64_t drv_kube_source_tick(drv_kube_source_t *self);
//  {watching, resources, last_error, ...} for GET /api/v1/engine, or NULL.
json_t *drv_kube_source_json(drv_kube_source_t *self);

#endif
