/*  drv_zygote_link — droverd's side of the worker zygote: instances forked
    from a pre-loaded worker instead of exec'd. drv_zygote_spawn returns the
    instance's pid, or -1 with err (the caller then uses fork+exec). */
#ifndef DRV_ZYGOTE_LINK_H
#define DRV_ZYGOTE_LINK_H

#include "drv_engine.h"

typedef struct drv_zygote_link_t drv_zygote_link_t;

drv_zygote_link_t *drv_zygote_link_new(void);
void drv_zygote_link_destroy(drv_zygote_link_t **self_p);
void drv_zygote_start(drv_engine_t *engine);
//  Whether pid is the zygote's (for the reaper).
bool drv_zygote_is(drv_engine_t *engine, pid_t pid);
//  SIGKILL (droverd's second SIGTERM, or its hard deadline).
void drv_zygote_kill(drv_engine_t *engine);
void drv_zygote_stop(drv_engine_t *engine);
void drv_zygote_on_exit(drv_engine_t *engine, int status);
//  fds: sockets the instance inherits (at most DRV_ZYGOTE_MAX_FDS).
pid_t drv_zygote_spawn(drv_engine_t *engine, const char *instance, int core, const int *fds, size_t nfds, char *err,
                       size_t errlen);

#endif
