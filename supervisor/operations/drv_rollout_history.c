/*  drv_rollout_history — a pipeline's rollouts as the API lists them: the
    newest DRV_ROLLOUTS_DETAILED kept whole, older finished ones as compact
    summaries beside those of earlier runs (past_rollouts), the newest
    DRV_ROLLOUT_HISTORY of both (drv_rollout.h). */
#include "drv_rollout_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  A rollout id's number ("rollout-12": 12), for the history's order.
static long long s_id_number(const char *id);

static long long s_number(const json_t *status)
{
    return s_id_number(json_string_value(json_object_get(status, "rollout_id")));
}

static int s_newest_first(const void *a, const void *b)
{
    long long x = s_number(*(json_t *const *)a), y = s_number(*(json_t *const *)b);
    return (x < y) - (x > y);
}

//  A kept summary (the compact text past_rollouts holds), parsed.
static json_t *s_past(const drv_pipeline_t *pipeline, size_t i)
{
    return json_loads(json_string_value(json_array_get(pipeline->past_rollouts, i)) ?: "null", 0, NULL);
}

json_t *drv_rollout_history(const drv_pipeline_t *pipeline)
{
    size_t live = zlistx_size(pipeline->rollouts), past = json_array_size(pipeline->past_rollouts);
    json_t **all = calloc(live + past + 1, sizeof *all);
    size_t n = 0;
    for (drv_rollout_t *r = zlistx_first(pipeline->rollouts); r; r = zlistx_next(pipeline->rollouts)) {
        all[n++] = drv_rollout_json(r);
    }
    for (size_t i = 0; i < past; i++) {
        json_t *r = s_past(pipeline, i);
        if (json_is_object(r)) {
            all[n++] = r;
        }
    }
    qsort(all, n, sizeof *all, s_newest_first); // compacted ones sit between this run's by number
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
        if (json_array_size(list) < DRV_ROLLOUT_HISTORY) {
            json_array_append(list, all[i]);
        }
        json_decref(all[i]);
    }
    free(all);
    return list;
}

json_t *drv_rollout_find_past(const drv_pipeline_t *pipeline, const char *id)
{
    char needle[80];
    snprintf(needle, sizeof needle, "\"rollout_id\":\"%s\"", id);
    for (size_t i = 0; i < json_array_size(pipeline->past_rollouts); i++) {
        if (strstr(json_string_value(json_array_get(pipeline->past_rollouts, i)) ?: "", needle)) {
            return s_past(pipeline, i);
        }
    }
    return NULL;
}

//  What the history keeps of a finished rollout once it is no longer among
//  the detailed ones: its RolloutStatus without plan, cores and history
//  (as the state file keeps them), as compact text: a few hundred bytes
//  instead of the record's few kilobytes.
static json_t *s_summary(json_t *status)
{
    json_object_del(status, "plan");
    json_object_del(status, "rollback_plan");
    json_object_del(status, "cores");
    json_object_del(status, "history");
    return status;
}

static void s_keep_past(drv_pipeline_t *pipeline, json_t *summary)
{
    char *text = json_dumps(summary, JSON_COMPACT);
    json_decref(summary);
    if (!pipeline->past_rollouts) {
        pipeline->past_rollouts = json_array();
    }
    if (text) {
        json_array_append_new(pipeline->past_rollouts, json_string(text));
        free(text);
    }
}

static long long s_id_number(const char *id)
{
    const char *dash = id ? strrchr(id, '-') : NULL;
    return dash ? atoll(dash + 1) : 0;
}

static long long s_past_number(const drv_pipeline_t *pipeline, size_t i)
{
    static const char key[] = "\"rollout_id\":\"rollout-";
    const char *at = strstr(json_string_value(json_array_get(pipeline->past_rollouts, i)) ?: "", key);
    return at ? atoll(at + sizeof key - 1) : 0;
}

//  The history keeps the DRV_ROLLOUT_HISTORY newest, whole or summarized:
//  the oldest of either kind goes first (never the one under way).
static void s_trim(drv_pipeline_t *pipeline)
{
    for (;;) {
        size_t live = pipeline->rollouts ? zlistx_size(pipeline->rollouts) : 0;
        if (live + json_array_size(pipeline->past_rollouts) <= DRV_ROLLOUT_HISTORY) {
            return;
        }
        long long lowest = -1;
        size_t past_at = 0;
        drv_rollout_t *oldest = NULL;
        for (size_t i = 0; i < json_array_size(pipeline->past_rollouts); i++) {
            long long number = s_past_number(pipeline, i);
            if (lowest < 0 || number < lowest) {
                lowest = number, past_at = i;
            }
        }
        for (drv_rollout_t *r = pipeline->rollouts ? zlistx_first(pipeline->rollouts) : NULL; r;
             r = zlistx_next(pipeline->rollouts)) {
            long long number = s_id_number(r->id);
            if (r != pipeline->active && (lowest < 0 || number < lowest)) {
                lowest = number, oldest = r;
            }
        }
        if (oldest) {
            zlistx_delete(pipeline->rollouts, zlistx_find(pipeline->rollouts, oldest));
        } else if (lowest >= 0) {
            json_array_remove(pipeline->past_rollouts, past_at);
        } else {
            return;
        }
    }
}

void drv_rollout_set_past(drv_pipeline_t *pipeline, const json_t *statuses)
{
    json_decref(pipeline->past_rollouts);
    pipeline->past_rollouts = NULL;
    size_t i;
    json_t *r;
    json_array_foreach(statuses, i, r)
    {
        if (json_is_object(r)) {
            s_keep_past(pipeline, s_summary(json_deep_copy(r)));
        }
    }
    s_trim(pipeline);
}

void drv_rollout_compact_history(drv_pipeline_t *pipeline)
{
    drv_rollout_t *newest = zlistx_last(pipeline->rollouts);
    bool again = true;
    while (again && zlistx_size(pipeline->rollouts) > DRV_ROLLOUTS_DETAILED) {
        again = false;
        for (drv_rollout_t *r = zlistx_first(pipeline->rollouts); r; r = zlistx_next(pipeline->rollouts)) {
            if (r != newest && r != pipeline->active && drv_rollout_finished(r) && !r->spec_kept) {
                json_t *summary = s_summary(drv_rollout_json(r));
                zlistx_delete(pipeline->rollouts, zlistx_cursor(pipeline->rollouts)); // its destructor frees it
                s_keep_past(pipeline, summary);
                again = true;
                break;
            }
        }
    }
    s_trim(pipeline);
}

json_t *drv_rollout_history_saved(const drv_pipeline_t *pipeline)
{
    json_t *all = drv_rollout_history(pipeline), *kept = json_array();
    for (size_t i = json_array_size(all); i-- > 0;) { // oldest first
        json_t *r = json_array_get(all, i);
        const char *state = json_string_value(json_object_get(r, "state")) ?: "";
        if (strcmp(state, "succeeded") && strcmp(state, "failed") && strcmp(state, "rollback_failed")) {
            continue; // under way: a restart says what became of it (rollout.interrupted)
        }
        json_array_append_new(kept, s_summary(json_deep_copy(r)));
    }
    json_decref(all);
    return kept;
}
