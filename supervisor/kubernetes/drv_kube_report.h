/*  drv_kube_report — what droverd tells the Kubernetes API about the
    DroverPipeline resources it reconciles (docs/kubernetes.md, "Pipelines
    as Kubernetes resources"): its own entry of each resource's status
    (a JSON merge patch of status.engines.<engine name> on the status
    subresource, so many droverds share one resource) and Events with the
    resource as the involved object. The requests go out from a thread of
    their own, so droverd's loop never waits on the API: a status not
    written is tried again (the newest of each resource only), an Event
    that fails is dropped, logged. */
#ifndef DRV_KUBE_REPORT_H
#define DRV_KUBE_REPORT_H

#include "drover/drv_kube.h"

#include <jansson.h>

typedef struct drv_kube_report_t drv_kube_report_t;

//  The reporter for kube's server, as engine (the entry's name, the Events'
//  reporting instance). The client must outlive it.
drv_kube_report_t *drv_kube_report_new(drv_kube_t *kube, const char *engine);
//  Stops its thread (within a request's time) and frees it.
void drv_kube_report_destroy(drv_kube_report_t **self_p);

//  Writes entry as this engine's status of resource namespace/name (entry
//  is stolen; a newer one for the same resource replaces one not sent yet).
void drv_kube_report_status(drv_kube_report_t *self, const char *namespace, const char *name, json_t *entry);
//  Records an Event (type "Normal" or "Warning", reason CamelCase) about
//  the resource whose object (its apiVersion, kind, metadata) is given.
void drv_kube_report_event(drv_kube_report_t *self, const json_t *object, const char *type, const char *reason,
                           const char *message);
//  Status writes that failed and Events dropped so far.
void drv_kube_report_failures(drv_kube_report_t *self, int64_t *statuses, int64_t *events);

#endif
