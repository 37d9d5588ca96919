/*  drv_waiters — see drv_waiters.h. */
#include "drv_waiters.h"
#include "drv_admin_request.h"

#include "drover/drv_time.h"

typedef struct {
    drv_admin_request_t *request;
    int64_t deadline_ms; // mono
} waiter_t;

struct drv_waiters_t {
    zlistx_t *list; // waiter_t, owned
};

drv_waiters_t *drv_waiters_new(void)
{
    drv_waiters_t *self = calloc(1, sizeof *self);
    self->list = zlistx_new();
    return self;
}

void drv_waiters_destroy(drv_waiters_t **self_p, const char *reason)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_waiters_t *self = *self_p;
    drv_waiters_abandon(self, reason);
    zlistx_destroy(&self->list);
    free(self);
    *self_p = NULL;
}

void drv_waiters_add(drv_waiters_t *self, drv_admin_request_t *request, int64_t timeout_ms)
{
    waiter_t *waiter = calloc(1, sizeof *waiter);
    waiter->request = request;
    waiter->deadline_ms = drv_time_mono_ms() + timeout_ms;
    zlistx_add_end(self->list, waiter);
}

size_t drv_waiters_size(const drv_waiters_t *self)
{
    return zlistx_size(self->list);
}

static void s_reply(waiter_t *waiter, drv_admin_response_t *response)
{
    if (!response->content_type) {
        response->content_type = "application/json";
    }
    waiter->request->reply(waiter->request, response);
    drv_admin_response_clear(response);
}

void drv_waiters_answer(drv_waiters_t *self, bool finished, drv_waiters_answer_fn *fn, void *arg)
{
    int64_t now = drv_time_mono_ms();
    waiter_t *waiter = zlistx_first(self->list);
    while (waiter) {
        if (!finished && now < waiter->deadline_ms) {
            waiter = zlistx_next(self->list);
            continue;
        }
        drv_admin_response_t response = {0};
        fn(arg, finished, &response);
        s_reply(waiter, &response);
        zlistx_delete(self->list, zlistx_cursor(self->list));
        free(waiter);
        waiter = zlistx_first(self->list);
    }
}

void drv_waiters_abandon(drv_waiters_t *self, const char *reason)
{
    waiter_t *waiter;
    while ((waiter = zlistx_first(self->list))) {
        drv_admin_response_t response = {0};
        drv_admin_error(&response, 503, "internal", "%s", reason);
        s_reply(waiter, &response);
        zlistx_delete(self->list, zlistx_cursor(self->list));
        free(waiter);
    }
}

int64_t drv_waiters_next(const drv_waiters_t *self)
{
    int64_t now = drv_time_mono_ms();
    int64_t next = -1;
    for (waiter_t *w = zlistx_first(self->list); w; w = zlistx_next(self->list)) {
        int64_t wait = w->deadline_ms > now ? w->deadline_ms - now : 0;
        next = next < 0 || wait < next ? wait : next;
    }
    return next;
}
