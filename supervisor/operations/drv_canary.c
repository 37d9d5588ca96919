/*  drv_canary — see drv_canary.h. */
#include "drv_canary.h"
#include "drv_executor.h"

#include "drover/drv_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { VERDICT_PENDING = 0, VERDICT_PASS, VERDICT_FAIL, VERDICT_PROMOTED } verdict_t;

static const char *s_verdicts[] = {"pending", "pass", "fail", "promoted"};

//  An instance's counters when the hold began.
typedef struct {
    char id[DRV_ID_MAX];
    int64_t records_in;
    int64_t errors;
    int restarts;
} baseline_t;

//  One generation's instances over the window.
typedef struct {
    int64_t records_in;
    int64_t errors;
    int crashes;
} window_t;

struct drv_canary_t {
    int cores;
    int64_t hold_ms;
    double max_error_ratio;
    bool auto_promote;
    bool begun;
    int64_t until_mono_ms;
    int64_t until_wall_ms;
    baseline_t *baseline; // baseline_count of them, owned
    size_t baseline_count;
    window_t fresh, old; // the latest evaluation
    verdict_t verdict;
    bool promote; // the operator said promote
};

drv_canary_t *drv_canary_new(const json_t *spec)
{
    json_t *policy = json_object_get(json_object_get(json_object_get(spec, "policies"), "rollout"), "canary");
    if (!json_is_object(policy)) {
        return NULL;
    }
    drv_canary_t *self = calloc(1, sizeof *self);
    if (!self) {
        abort();
    }
    self->cores = (int)json_integer_value(json_object_get(policy, "cores"));
    self->hold_ms = json_integer_value(json_object_get(policy, "hold_secs")) * 1000;
    self->max_error_ratio = json_number_value(json_object_get(policy, "max_error_ratio"));
    self->auto_promote = json_is_true(json_object_get(policy, "auto_promote"));
    return self;
}

void drv_canary_destroy(drv_canary_t **self_p)
{
    if (self_p && *self_p) {
        free((*self_p)->baseline);
        free(*self_p);
        *self_p = NULL;
    }
}

int drv_canary_cores(const drv_canary_t *self)
{
    return self->cores;
}

void drv_canary_promote(drv_canary_t *self)
{
    self->promote = true;
}

bool drv_canary_awaiting_promote(const drv_canary_t *self)
{
    return self->verdict == VERDICT_PASS && !self->auto_promote && !self->promote;
}

static const baseline_t *s_baseline(const drv_canary_t *self, const char *id)
{
    for (size_t i = 0; i < self->baseline_count; i++) {
        if (!strcmp(self->baseline[i].id, id)) {
            return &self->baseline[i];
        }
    }
    return NULL;
}

static void s_begin(drv_canary_t *self, drv_pipeline_t *pipeline, int64_t now_ms)
{
    self->begun = true;
    self->until_mono_ms = now_ms + self->hold_ms;
    self->until_wall_ms = drv_time_wall_ms() + self->hold_ms;
    self->baseline = calloc(zlistx_size(pipeline->instances) + 1, sizeof *self->baseline);
    if (!self->baseline) {
        abort();
    }
    for (drv_instance_t *inst = zlistx_first(pipeline->instances); inst; inst = zlistx_next(pipeline->instances)) {
        baseline_t *b = &self->baseline[self->baseline_count++];
        snprintf(b->id, sizeof b->id, "%s", inst->id);
        b->records_in = inst->records_in;
        b->errors = inst->errors;
        b->restarts = inst->restarts;
    }
}

//  What each generation did since the hold began. A process that restarted
//  counts from zero again: what it did before its crash is lost to the
//  window (its crash is not).
static void s_measure(drv_canary_t *self, drv_pipeline_t *pipeline, int64_t new_generation, int64_t old_generation)
{
    memset(&self->fresh, 0, sizeof self->fresh);
    memset(&self->old, 0, sizeof self->old);
    for (drv_instance_t *inst = zlistx_first(pipeline->instances); inst; inst = zlistx_next(pipeline->instances)) {
        window_t *w = inst->generation == new_generation   ? &self->fresh
                      : inst->generation == old_generation ? &self->old
                                                           : NULL;
        if (!w) {
            continue;
        }
        const baseline_t *b = s_baseline(self, inst->id);
        baseline_t zero = {.records_in = 0};
        b = b ? b : &zero;
        w->records_in += inst->records_in >= b->records_in ? inst->records_in - b->records_in : inst->records_in;
        w->errors += inst->errors >= b->errors ? inst->errors - b->errors : inst->errors;
        w->crashes += inst->restarts - b->restarts;
    }
}

static double s_ratio(const window_t *w)
{
    return w->records_in > 0 ? (double)w->errors / (double)w->records_in : 0.0;
}

int drv_canary_hold(drv_canary_t *self, drv_pipeline_t *pipeline, int64_t new_generation, int64_t old_generation,
                    int64_t now_ms, int64_t *wake_ms, char *why, size_t whylen)
{
    if (!self) {
        return DRV_EXEC_DONE;
    }
    if (!self->begun) {
        s_begin(self, pipeline, now_ms);
    }
    s_measure(self, pipeline, new_generation, old_generation);
    if (self->fresh.crashes > self->old.crashes) {
        self->verdict = VERDICT_FAIL;
        snprintf(why, whylen, "canary failed: generation %lld crashed %d time(s) in its hold, generation %lld %d",
                 (long long)new_generation, self->fresh.crashes, (long long)old_generation, self->old.crashes);
        return DRV_EXEC_FAILED;
    }
    if (self->promote) {
        self->verdict = self->verdict == VERDICT_PASS ? VERDICT_PASS : VERDICT_PROMOTED;
        return DRV_EXEC_DONE;
    }
    if (self->verdict == VERDICT_PASS) {
        *wake_ms = 0; // waits for promote; a crash still fails it
        return DRV_EXEC_WAIT;
    }
    if (now_ms < self->until_mono_ms) {
        *wake_ms = self->until_mono_ms;
        return DRV_EXEC_WAIT;
    }
    double fresh = s_ratio(&self->fresh), old = s_ratio(&self->old);
    if (fresh > self->max_error_ratio && fresh > old) {
        self->verdict = VERDICT_FAIL;
        snprintf(why, whylen,
                 "canary failed: error ratio %.4f over %lld s (%lld errors in %lld records) is above max_error_ratio "
                 "%g and generation %lld's %.4f",
                 fresh, (long long)(self->hold_ms / 1000), (long long)self->fresh.errors,
                 (long long)self->fresh.records_in, self->max_error_ratio, (long long)old_generation, old);
        return DRV_EXEC_FAILED;
    }
    self->verdict = VERDICT_PASS;
    if (self->auto_promote) {
        return DRV_EXEC_DONE;
    }
    *wake_ms = 0;
    return DRV_EXEC_WAIT;
}

const char *drv_canary_verdict(const drv_canary_t *self)
{
    return s_verdicts[self->verdict];
}

double drv_canary_ratio(const drv_canary_t *self, bool fresh)
{
    return s_ratio(fresh ? &self->fresh : &self->old);
}

json_t *drv_canary_json(const drv_canary_t *self)
{
    char until[40] = "";
    if (self->begun) {
        drv_time_rfc3339(self->until_wall_ms, until, sizeof until);
    }
    return json_pack("{s:i, s:I, s:f, s:b, s:o, s:f, s:f, s:I, s:I, s:i, s:i, s:s}", "cores", self->cores, "hold_secs",
                     (json_int_t)(self->hold_ms / 1000), "max_error_ratio", self->max_error_ratio, "auto_promote",
                     self->auto_promote, "until", self->begun ? json_string(until) : json_null(), "error_ratio_new",
                     s_ratio(&self->fresh), "error_ratio_old", s_ratio(&self->old), "records_new",
                     (json_int_t)self->fresh.records_in, "records_old", (json_int_t)self->old.records_in, "crashes_new",
                     self->fresh.crashes, "crashes_old", self->old.crashes, "verdict", s_verdicts[self->verdict]);
}
