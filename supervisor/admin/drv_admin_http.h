/*  drv_admin_http — the admin API over HTTP, served from droverd's loop
    (common/drv_httpd: no thread of its own). */
#ifndef DRV_ADMIN_HTTP_H
#define DRV_ADMIN_HTTP_H

#include "drv_engine.h"

#include <stdint.h>

int drv_admin_http_start(drv_engine_t *engine, char *err, size_t errlen);
//  The descriptor to poll for reading (-1: no HTTP), how long the loop may
//  sleep at most for its sake (-1: forever), and what to call when either says so.
int drv_admin_http_fd(drv_engine_t *engine);
int64_t drv_admin_http_timeout_ms(drv_engine_t *engine);
void drv_admin_http_run(drv_engine_t *engine);
//  Answers what is still waiting (503), sends what is answered, closes.
void drv_admin_http_stop(drv_engine_t *engine);

#endif
