/*  drv_admin_zmq — the admin API over a ZeroMQ ROUTER (msgpack envelope),
    optionally CURVE-authenticated. */
#ifndef DRV_ADMIN_ZMQ_H
#define DRV_ADMIN_ZMQ_H

#include "drv_engine.h"

#include <czmq.h>

int drv_admin_zmq_start(drv_engine_t *engine, char *err, size_t errlen);
void drv_admin_zmq_on_readable(drv_engine_t *engine);
void drv_admin_zmq_stop(drv_engine_t *engine);

#endif
