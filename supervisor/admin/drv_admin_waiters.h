/*  drv_admin_waiters — admin requests with wait=true, kept until their
    operation (a rollout, a shutdown) ends or their own deadline passes.
    The operations only say that they ended (drv_op_end.h); what the waiting
    client is told is decided here:
    - a rollout: 200 with its RolloutStatus once it succeeded, 409 with the
      reason once it failed or was rolled back;
    - a shutdown: 200 with its ShutdownStatus once stopped;
    - either: 504 with the status as it stands when the request's timeout
      passes first, 503 when the record is discarded or droverd stops. */
#ifndef DRV_ADMIN_WAITERS_H
#define DRV_ADMIN_WAITERS_H

#include "drv_admin_request.h"
#include "drv_engine.h"
#include "drv_rollout.h"
#include "drv_shutdown.h"

//  Keeps request until rollout (or shutdown) ends or timeout_ms passes; an
//  operation already over is answered at once.
void drv_admin_wait_rollout(drv_engine_t *engine, drv_rollout_t *rollout, drv_admin_request_t *request,
                            int64_t timeout_ms);
void drv_admin_wait_shutdown(drv_engine_t *engine, drv_shutdown_t *shutdown, drv_admin_request_t *request,
                             int64_t timeout_ms);
//  Answers the requests whose time is up (504); returns ms until the next
//  one's deadline, or -1.
int64_t drv_admin_waiters_tick(drv_engine_t *engine);
//  Answers every request still waiting with 503 and the reason (droverd is stopping).
void drv_admin_waiters_abandon(drv_engine_t *engine, const char *reason);

#endif
