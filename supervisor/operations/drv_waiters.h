/*  drv_waiters — admin requests kept until an operation (a rollout, a
    shutdown) ends or their own deadline passes. One piece of code for every
    route that accepts wait=true. */
#ifndef DRV_WAITERS_H
#define DRV_WAITERS_H

#include "drv_admin_request.h"
#include "drv_engine.h"

typedef struct drv_waiters_t drv_waiters_t;

//  Fills the response for one waiting request; finished is false when the
//  request's own deadline passed first.
typedef void(drv_waiters_answer_fn)(void *arg, bool finished, drv_admin_response_t *response);

drv_waiters_t *drv_waiters_new(void);
//  Answers whoever still waits with 503 and the reason, then frees.
void drv_waiters_destroy(drv_waiters_t **self_p, const char *reason);

void drv_waiters_add(drv_waiters_t *self, drv_admin_request_t *request, int64_t timeout_ms);
size_t drv_waiters_size(const drv_waiters_t *self);

//  finished: answers everyone; otherwise only those whose deadline passed.
void drv_waiters_answer(drv_waiters_t *self, bool finished, drv_waiters_answer_fn *fn, void *arg);
//  Answers everyone with 503 and the reason.
void drv_waiters_abandon(drv_waiters_t *self, const char *reason);
//  Ms until the earliest deadline, or -1 when nobody waits.
int64_t drv_waiters_next(const drv_waiters_t *self);

#endif
