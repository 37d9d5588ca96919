/*  drv_admin_waiters — see the header. Each waiter is a listener of its
    operation's end (drv_rollout_on_end, drv_shutdown_on_end) and is on the
    engine's list for its deadline; whichever comes first answers it and
    takes it off the other. */
#include "drv_admin_waiters.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <stdlib.h>

typedef struct waiter_t waiter_t;
struct waiter_t {
    drv_engine_t *engine;
    drv_admin_request_t *request;
    drv_rollout_t *rollout; // one of the two
    drv_shutdown_t *shutdown;
    int64_t deadline_ms; // mono
    waiter_t *prev, *next;
};

struct drv_admin_waiters_t {
    waiter_t *first;
};

static void s_unlink(drv_engine_t *engine, waiter_t *w)
{
    if (w->prev) {
        w->prev->next = w->next;
    } else {
        engine->waiters->first = w->next;
    }
    if (w->next) {
        w->next->prev = w->prev;
    }
}

static void s_reply(waiter_t *w, drv_admin_response_t *response)
{
    if (!response->content_type) {
        response->content_type = "application/json";
    }
    w->request->reply(w->request, response);
    drv_admin_response_clear(response);
}

//  The answer as the operation stands; ended: it is over (else the
//  request's time ran out first).
static void s_outcome(waiter_t *w, bool ended, drv_admin_response_t *response)
{
    if (w->rollout) {
        json_t *status = drv_rollout_json(w->rollout);
        if (!ended || !drv_rollout_finished(w->rollout)) {
            response->status = 504;
            response->json = status;
        } else if (drv_rollout_state(w->rollout) == DRV_RO_SUCCEEDED) {
            response->status = 200;
            response->json = status;
        } else {
            response->status = 409;
            response->json = json_pack("{s:{s:s, s:s}, s:o}", "error", "kind", "conflict", "message",
                                       drv_rollout_failure(w->rollout), "rollout", status);
        }
    } else {
        response->status = ended && drv_shutdown_finished(w->shutdown) ? 200 : 504;
        response->json = drv_shutdown_json(w->shutdown);
    }
}

//  Answers w (outcome, or 503 with reason) and frees it; it is already off
//  its operation's listeners.
static void s_answer(waiter_t *w, bool ended, const char *reason)
{
    s_unlink(w->engine, w);
    drv_admin_response_t response = {0};
    if (reason) {
        drv_admin_error(&response, 503, "internal", "%s", reason);
    } else {
        s_outcome(w, ended, &response);
    }
    s_reply(w, &response);
    free(w);
}

static void s_on_end(void *arg, drv_op_end_t how)
{
    waiter_t *w = arg;
    s_answer(w, true,
             how == DRV_OP_DISCARDED ? (w->rollout ? "the rollout was discarded" : "the shutdown record was discarded")
                                     : NULL);
}

static void s_add(drv_engine_t *engine, drv_rollout_t *rollout, drv_shutdown_t *shutdown, drv_admin_request_t *request,
                  int64_t timeout_ms)
{
    waiter_t *w = calloc(1, sizeof *w);
    if (!engine->waiters) {
        engine->waiters = calloc(1, sizeof *engine->waiters);
    }
    drv_admin_response_t response = {0};
    if (!w || !engine->waiters) {
        free(w);
        drv_admin_error(&response, 503, "unavailable", "out of memory; the operation goes on: poll its status");
        request->reply(request, &response);
        drv_admin_response_clear(&response);
        return;
    }
    *w = (waiter_t){.engine = engine,
                    .request = request,
                    .rollout = rollout,
                    .shutdown = shutdown,
                    .deadline_ms = drv_time_mono_ms() + timeout_ms,
                    .next = engine->waiters->first};
    if (w->next) {
        w->next->prev = w;
    }
    engine->waiters->first = w;
    bool over = rollout ? drv_rollout_finished(rollout) : drv_shutdown_finished(shutdown);
    int listening = over      ? -1
                    : rollout ? drv_rollout_on_end(rollout, s_on_end, w)
                              : drv_shutdown_on_end(shutdown, s_on_end, w);
    if (listening != 0) {
        s_answer(w, true, NULL); // over already (or no room to listen: the status as it stands)
    }
}

void drv_admin_wait_rollout(drv_engine_t *engine, drv_rollout_t *rollout, drv_admin_request_t *request,
                            int64_t timeout_ms)
{
    s_add(engine, rollout, NULL, request, timeout_ms);
}

void drv_admin_wait_shutdown(drv_engine_t *engine, drv_shutdown_t *shutdown, drv_admin_request_t *request,
                             int64_t timeout_ms)
{
    s_add(engine, NULL, shutdown, request, timeout_ms);
}

static void s_stop_listening(waiter_t *w)
{
    if (w->rollout) {
        drv_rollout_forget(w->rollout, w);
    } else {
        drv_shutdown_forget(w->shutdown, w);
    }
}

int64_t drv_admin_waiters_tick(drv_engine_t *engine)
{
    if (!engine->waiters) {
        return -1;
    }
    int64_t now = drv_time_mono_ms(), next = -1;
    waiter_t *w = engine->waiters->first;
    while (w) {
        waiter_t *later = w->next;
        if (now >= w->deadline_ms) {
            s_stop_listening(w);
            s_answer(w, false, NULL); // 504 with the status as it stands
        } else if (next < 0 || w->deadline_ms - now < next) {
            next = w->deadline_ms - now;
        }
        w = later;
    }
    return next;
}

void drv_admin_waiters_abandon(drv_engine_t *engine, const char *reason)
{
    if (!engine->waiters) {
        return;
    }
    while (engine->waiters->first) {
        waiter_t *w = engine->waiters->first;
        s_stop_listening(w);
        s_answer(w, false, reason);
    }
    free(engine->waiters);
    engine->waiters = NULL;
}
