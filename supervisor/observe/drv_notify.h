/*  drv_notify — service manager notification: sd_notify(3), a no-op
    unless NOTIFY_SOCKET is set (systemd Type=notify). */
#ifndef DRV_NOTIFY_H
#define DRV_NOTIFY_H

#include "drv_engine.h"

void drv_notify_init(drv_engine_t *engine);
//  READY=1 once startup (or a reload) has settled, and watchdog pings.
//  Returns ms until the next ping is due (-1: none).
int64_t drv_notify_tick(drv_engine_t *engine);
void drv_notify_reloading(drv_engine_t *engine);
void drv_notify_stopping(drv_engine_t *engine);

#endif
