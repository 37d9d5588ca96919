/*  drv_admin_http — the admin API over HTTP (libmicrohttpd in its own
    thread, requests handed to the loop). */
#ifndef DRV_ADMIN_HTTP_H
#define DRV_ADMIN_HTTP_H

#include "drv_engine.h"

#include <czmq.h>

int drv_admin_http_start(drv_engine_t *engine, char *err, size_t errlen);
//  The socket on which MHD's thread hands requests to the loop (NULL: no HTTP).
zsock_t *drv_admin_http_socket(drv_engine_t *engine);
void drv_admin_http_on_readable(drv_engine_t *engine);
void drv_admin_http_stop(drv_engine_t *engine);

#endif
