/*  drv_config_watch — engine.watch_config: the config file is reloaded when
    it changes, as SIGHUP would reload it.

    It watches (inotify) the directory the path names, not the file: what
    editors do (write a temp file, rename it over), what `kubectl apply` of a
    ConfigMap makes the kubelet do (write a new timestamped directory, then
    atomically rename a new `..data` symlink over the old one, the file being
    a symlink through `..data`) and a plain rewrite all show there. A
    directory the path resolves to elsewhere is watched too.

    A burst of events gives one reload: it waits until the directory has
    been quiet for QUIET_MS, then reads the file and reloads only when its
    content differs from what was last read (so touching it, or the
    kubelet's own bookkeeping, reloads nothing). An invalid file is read
    once and refused like SIGHUP refuses it (log, config.invalid event,
    nothing changes); fixing it reloads. */
#ifndef DRV_CONFIG_WATCH_H
#define DRV_CONFIG_WATCH_H

#include "drv_engine.h"

typedef struct drv_config_watch_t drv_config_watch_t;

//  Starts watching the engine's config file; NULL (logged) when inotify
//  cannot (droverd then runs without watching, as SIGHUP still works).
drv_config_watch_t *drv_config_watch_new(drv_engine_t *engine);
void drv_config_watch_destroy(drv_config_watch_t **self_p);

//  The inotify descriptor to poll for reading.
int drv_config_watch_fd(const drv_config_watch_t *self);
//  Reads what inotify has; a relevant event (re)starts the quiet period.
void drv_config_watch_on_readable(drv_config_watch_t *self);
//  Reloads when the quiet period is over and the content changed. Returns ms
//  until it should be called again, or -1.
int64_t drv_config_watch_tick(drv_engine_t *engine, drv_config_watch_t *self);

#endif
