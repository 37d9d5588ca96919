/*  drv_admission — whether a change to a pipeline may start now, asked the
    same way by every door: a PUT or rollback over HTTP or zmq, and SIGHUP.
    Refused: a receiver endpoint another pipeline holds (a problem at its
    node's path, 422 for the admin API), a rollout or shutdown under way on
    the pipeline, droverd stopping, or engine.limits.max_pipelines reached
    (a conflict, 409). */
#ifndef DRV_ADMISSION_H
#define DRV_ADMISSION_H

#include "drv_engine.h"

#include "drover/drv_problems.h"

#include <stddef.h>

#define DRV_ADMIT_OK 0
#define DRV_ADMIT_INVALID 1  // problems holds what is wrong with the spec
#define DRV_ADMIT_CONFLICT 2 // why says what is in the way

//  spec is normalized; pipeline is the one named (group, name), or NULL when
//  it does not exist yet. The spec's own problems, if any, are already in
//  problems: endpoint problems are added to them.
int drv_admission_check(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *group, const char *name,
                        const json_t *spec, drv_problems_t *problems, char *why, size_t whylen);

#endif
