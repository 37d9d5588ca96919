/*  drv_notify — service manager notification: sd_notify(3), a no-op
    unless NOTIFY_SOCKET is set (systemd Type=notify). */
#ifndef DRV_NOTIFY_H
#define DRV_NOTIFY_H

#include "drv_engine.h"

typedef struct drv_notify_t drv_notify_t;

//  Reads $WATCHDOG_USEC: a watchdog ping every half of it, when set.
drv_notify_t *drv_notify_new(void);
void drv_notify_destroy(drv_notify_t **self_p);
//  READY=1 once startup (or a reload) has settled, and watchdog pings.
//  Returns ms until the next ping is due (-1: none).
int64_t drv_notify_tick(drv_notify_t *self, drv_engine_t *engine);
void drv_notify_reloading(drv_notify_t *self, drv_engine_t *engine);
void drv_notify_stopping(drv_notify_t *self);

#endif
