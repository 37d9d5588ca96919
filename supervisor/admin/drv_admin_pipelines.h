/*  drv_admin_pipelines — PUT of a pipeline and its rollout history. */
#ifndef DRV_ADMIN_PIPELINES_H
#define DRV_ADMIN_PIPELINES_H

#include "drv_admin.h"
#include "drv_rollout.h"

//  Returns true when the request was kept (a waiting PUT): the rollout answers
//  it later, and the router must not.
bool drv_admin_pipeline_put(drv_engine_t *engine, drv_admin_request_t *request, const char *group, const char *name,
                            drv_admin_response_t *response);
void drv_admin_rollouts_list(drv_engine_t *engine, drv_pipeline_t *pipeline, drv_admin_response_t *response);
//  pause, resume, promote or abort rollout id ("current": the one under way):
//  200 with its RolloutStatus, 404, or 409 saying why not.
void drv_admin_rollout_control(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *id, drv_control_t what,
                               drv_admin_response_t *response);
void drv_admin_rollout_get(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *id,
                           drv_admin_response_t *response);

//  POST .../shutdown, and DELETE (forget: the pipeline is removed once stopped).
bool drv_admin_pipeline_shutdown(drv_engine_t *engine, drv_admin_request_t *request, const char *group,
                                 const char *name, bool forget, drv_admin_response_t *response);
//  POST .../rollback: a replace with the spec before the last replace.
bool drv_admin_pipeline_rollback(drv_engine_t *engine, drv_admin_request_t *request, const char *group,
                                 const char *name, drv_admin_response_t *response);
void drv_admin_shutdown_get(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *id,
                            drv_admin_response_t *response);

#endif
