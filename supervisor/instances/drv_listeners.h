/*  drv_listeners — the sockets droverd binds for a pipeline's network
    receivers (receiver:syslog): bound when a generation that needs one is
    about to start, kept while any live generation needs it, and handed to
    every instance at spawn (inherited over exec, or passed to the zygote). */
#ifndef DRV_LISTENERS_H
#define DRV_LISTENERS_H

#include "drv_engine.h"

#include "drover/drv_problems.h"

//  Binds every endpoint spec listens on that the pipeline does not hold yet.
//  Returns 0, or -1 with "udp://...: bind: <errno>" in why (what this call
//  bound stays until the next prune).
int drv_listeners_open(drv_pipeline_t *pipeline, const json_t *spec, char *why, size_t whylen);
//  dry_run=instantiate: binds, then closes at once, every endpoint spec
//  listens on that the pipeline (NULL: none yet) does not hold; one that
//  cannot be bound adds its problem (path "nodes.N.config.endpoint").
void drv_listeners_probe(drv_pipeline_t *pipeline, const json_t *spec, drv_problems_t *problems);
//  Closes the sockets no live generation needs any more: those of the
//  pipeline's spec while it runs or changes, and of each instance's spec.
void drv_listeners_prune(drv_pipeline_t *pipeline);
//  The descriptors an instance running spec inherits, at most max.
size_t drv_listeners_fds(drv_pipeline_t *pipeline, const json_t *spec, int *fds, size_t max);

#endif
