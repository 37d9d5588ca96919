/*  drv_admin_routes — what each admin route answers (docs/operations.md, the admin API):
    one handler per {method, pattern} row of the router's table
    (drv_admin_router.c). args are the pattern's {captures}, in order. A
    handler returns true when it kept the request to answer later (a waiting
    PUT, shutdown or rollback). */
#ifndef DRV_ADMIN_ROUTES_H
#define DRV_ADMIN_ROUTES_H

#include "drv_admin.h"

typedef bool(drv_route_fn)(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                           drv_admin_response_t *response);

drv_route_fn drv_route_livez, drv_route_readyz, drv_route_metrics, drv_route_status, drv_route_engine, drv_route_opamp;
drv_route_fn drv_route_upgrade_get, drv_route_upgrade_post;
drv_route_fn drv_route_groups, drv_route_group_get, drv_route_group_put, drv_route_group_delete;
drv_route_fn drv_route_pipelines, drv_route_pipeline_get, drv_route_pipeline_put, drv_route_pipeline_delete;
drv_route_fn drv_route_pipeline_status, drv_route_rollouts, drv_route_rollout_get, drv_route_shutdown_get;
drv_route_fn drv_route_pipeline_rates;
drv_route_fn drv_route_pipeline_shutdown, drv_route_pipeline_rollback;
drv_route_fn drv_route_rollout_control;
drv_route_fn drv_route_events, drv_route_tap, drv_route_ui; // drv_admin_live.c

#endif
