/*  drv_admission — whether a change to a pipeline may start now, asked the
    same way by every door: PUT, rollback, shutdown and DELETE over HTTP or
    zmq, and SIGHUP.
    Refused: a receiver endpoint another pipeline holds (a problem at its
    node's path, 422 for the admin API), a rollout or shutdown under way on
    the pipeline, droverd stopping, or engine.limits.max_pipelines reached
    (a conflict, 409). */
#ifndef DRV_ADMISSION_H
#define DRV_ADMISSION_H

#include "drv_engine.h"

#include "drover/drv_problems.h"

#include <stdbool.h>
#include <stddef.h>

#define DRV_ADMIT_OK 0
#define DRV_ADMIT_INVALID 1  // problems holds what is wrong with the spec
#define DRV_ADMIT_CONFLICT 2 // why says what is in the way

//  A change to an existing pipeline (a new spec, a shutdown): true, with why,
//  when a rollout or shutdown is under way on it (409).
bool drv_admission_busy(const drv_pipeline_t *pipeline, char *why, size_t whylen);

//  A new spec for a pipeline: spec is normalized; pipeline is the one it is
//  for, or NULL when it does not exist yet. Endpoint problems are added to
//  problems. Adds to drv_admission_busy: droverd stopping, max_pipelines.
int drv_admission_check(drv_engine_t *engine, drv_pipeline_t *pipeline, const json_t *spec, drv_problems_t *problems,
                        char *why, size_t whylen);

#endif
