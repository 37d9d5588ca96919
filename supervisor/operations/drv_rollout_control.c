/*  drv_rollout_control — what an operator does to a rollout under way:

      pause    the step under way completes, no other begins; the rollout is
               paused (both generations serve as they are) until resume
      resume   it goes on; a canary that passed and waits for promote is
               promoted (what else could "go on" mean for it)
      promote  a canary's hold ends now, as passed
      abort    it rolls back now, as a failed step would: the old generation
               gets every core back; a drain under way completes first

    Each is recorded in the rollout's history and published as an event
    (rollout.pause_requested and so on). What the rollout's state does not
    allow (it ended, it is rolling back, it has no canary to promote) is
    refused with the reason and what would work. */
#include "drv_rollout_internal.h"
#include "drv_canary.h"
#include "drv_events.h"

#include "drover/drv_log.h"

#include <stdio.h>

const char *drv_control_name(drv_control_t what)
{
    static const char *names[] = {"pause", "resume", "promote", "abort"};
    return what <= DRV_CONTROL_ABORT ? names[what] : "?";
}

//  The canary's hold has not passed yet (it is under way, or to come).
static bool s_canary_pending(const drv_rollout_t *self)
{
    for (size_t i = self->exec.next; self->canary && i < self->plan.count; i++) {
        if (self->plan.steps[i].op == DRV_OP_HOLD) {
            return true;
        }
    }
    return false;
}

//  Why what cannot be done now, or NULL when it can.
static const char *s_refusal(const drv_rollout_t *self, drv_control_t what, char *why, size_t whylen)
{
    if (drv_rollout_finished(self)) {
        snprintf(why, whylen, "%s has ended (%s): nothing to %s", self->id, drv_rollout_state_name(self->state),
                 drv_control_name(what));
        return why;
    }
    if (self->state == DRV_RO_ROLLING_BACK) {
        snprintf(why, whylen, "%s is rolling back: it cannot be %s", self->id,
                 what == DRV_CONTROL_PAUSE     ? "paused"
                 : what == DRV_CONTROL_ABORT   ? "aborted again"
                 : what == DRV_CONTROL_PROMOTE ? "promoted"
                                               : "resumed");
        return why;
    }
    if (self->abort_requested) {
        snprintf(why, whylen, "%s was aborted: it rolls back once its drain under way is done", self->id);
        return why;
    }
    if (what == DRV_CONTROL_PROMOTE && !s_canary_pending(self)) {
        snprintf(why, whylen, "%s has no canary waiting to be promoted%s", self->id,
                 self->canary ? " (it is past its hold)" : "; to go on after a pause, resume it");
        return why;
    }
    return NULL;
}

int drv_rollout_control(drv_engine_t *engine, drv_pipeline_t *pipeline, drv_rollout_t *self, drv_control_t what,
                        char *why, size_t whylen)
{
    if (s_refusal(self, what, why, whylen)) {
        return -1;
    }
    const char *detail = "";
    switch (what) {
    case DRV_CONTROL_PAUSE:
        detail = self->pause_requested ? "already paused" : "after the step under way";
        self->pause_requested = true;
        break;
    case DRV_CONTROL_RESUME:
        detail = self->canary && drv_canary_awaiting_promote(self->canary) ? "the canary is promoted"
                 : self->pause_requested                                   ? ""
                                                                           : "it was not paused";
        if (self->canary && drv_canary_awaiting_promote(self->canary)) {
            drv_canary_promote(self->canary);
        }
        self->pause_requested = false;
        break;
    case DRV_CONTROL_PROMOTE:
        drv_canary_promote(self->canary);
        self->pause_requested = false;
        detail = "the canary's hold ends now";
        break;
    case DRV_CONTROL_ABORT:
        self->abort_requested = true;
        detail = "rolling back";
        break;
    }
    drv_rollout_record(self, drv_control_name(what), "%s", detail);
    drv_info("rollout %s pipeline=%s id=%s", drv_control_name(what), pipeline->key, self->id);
    char topic[64];
    snprintf(topic, sizeof topic, "rollout.%s_requested", drv_control_name(what));
    drv_events_publish(
        engine, topic, self->group, self->pipeline,
        json_pack("{s:s, s:I}", "rollout_id", self->id, "target_generation", (json_int_t)self->plan.target_generation));
    drv_rollout_advance(engine, self, pipeline);
    return 0;
}
