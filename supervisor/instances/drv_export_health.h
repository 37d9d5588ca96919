/*  drv_export_health — whether a pipeline's exporters deliver
    (docs/operations.md, PipelineStatus): each heartbeat says, per exporter, how long nothing was delivered
    since an attempt failed (or how long it has been backlogged) and the
    last error. A pipeline one of whose exporters has failed for
    policies.health.exporter_failing_secs is degraded with reason
    exporter_failing (observe/drv_status.c reads what is kept here); it is
    logged and evented (pipeline.exporter_failing, and
    pipeline.exporter_recovered when it delivers again). /readyz does not
    look at it: Kubernetes must not pull a pod for a dead backend. */
#ifndef DRV_EXPORT_HEALTH_H
#define DRV_EXPORT_HEALTH_H

#include "drv_engine.h"

//  The instance's counters changed (a heartbeat), or it is gone (nodes
//  NULL): its pipeline's verdict is made again from every instance's
//  counters; a change touches the pipeline.
void drv_export_health_update(drv_engine_t *engine, drv_instance_t *inst);

#endif
