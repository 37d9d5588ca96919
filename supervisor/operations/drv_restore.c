/*  drv_restore — see drv_restore.h. */
#include "drv_restore.h"
#include "drv_operations.h"
#include "drv_events.h"
#include "drv_registry.h"
#include "drv_rollout.h"
#include "drv_state.h"

#include "drover/drv_log.h"
#include "drover/drv_spec.h"

#include <stdlib.h>
#include <string.h>

//  generation: the one to come up as (a restored pipeline keeps its number).
//  cause: "restart" (as it ran before) or "config" (the file's).
static void s_create(drv_engine_t *engine, const char *group, const char *name, json_t *spec, drv_source_t source,
                     int64_t generation, const char *cause)
{
    drv_change_t change = {.group = group,
                           .name = name,
                           .spec = spec,
                           .source = source,
                           .generation = generation,
                           .opts = {.supervised = true, .cause = cause}};
    char why[8];
    drv_rollout_t *rollout;
    drv_operations_apply(engine, &change, NULL, why, sizeof why, &rollout); // not admitted: it cannot be refused
}

//  A rollout was under way (or paused) when droverd stopped: its spec was
//  never applied, so the pipeline comes back as its last applied
//  generation, which is a rollback; say so, and how to try again.
static void s_interrupted(drv_engine_t *engine, const char *group, const char *name, int64_t generation,
                          json_t *rollout)
{
    if (!json_is_object(rollout)) {
        return;
    }
    const char *id = json_string_value(json_object_get(rollout, "rollout_id"));
    const char *state = json_string_value(json_object_get(rollout, "state"));
    json_int_t target = json_integer_value(json_object_get(rollout, "target_generation"));
    const char *op = json_string_value(json_object_get(rollout, "op"));
    drv_warn("restart: rollout %s of %s:%s (to generation %lld) was %s at step %lld (%s) when "
             "droverd stopped; it is "
             "rolled back: generation %lld is restored; apply the spec again to retry",
             id ? id : "?", group, name, (long long)target, state ? state : "under way",
             (long long)json_integer_value(json_object_get(rollout, "step")), op ? op : "?", (long long)generation);
    drv_events_publish(engine, "rollout.interrupted", group, name,
                       json_pack("{s:O?, s:O?, s:O?, s:O?, s:s, s:I}", "rollout_id",
                                 json_object_get(rollout, "rollout_id"), "state", json_object_get(rollout, "state"),
                                 "step", json_object_get(rollout, "step"), "target_generation",
                                 json_object_get(rollout, "target_generation"), "outcome", "rolled_back",
                                 "restored_generation", (json_int_t)generation));
}

typedef enum { FILE_SAME, FILE_CHANGED, FILE_GONE } file_verdict_t;

//  What became of a pipeline's entry in the config file since the state
//  file was written (config: the hashes it recorded; NULL: none recorded).
static file_verdict_t s_file_verdict(drv_engine_t *engine, const json_t *config, const char *group, const char *name)
{
    if (!config) {
        return FILE_SAME; // a state file from before the record: it wins, as it always did
    }
    const json_t *now = json_object_get(json_object_get(engine->config->groups, group), name);
    const char *then = json_string_value(json_object_get(json_object_get(config, group), name));
    if (!now) {
        return then ? FILE_GONE : FILE_SAME; // never the file's: the API's
    }
    char *hash = drv_spec_hash(now);
    bool same = then && hash && !strcmp(hash, then);
    free(hash);
    return same ? FILE_SAME : FILE_CHANGED;
}

static void s_file_wins(drv_engine_t *engine, const char *group, const char *name, int64_t generation, const char *why)
{
    json_t *spec = json_object_get(json_object_get(engine->config->groups, group), name);
    drv_info("restart: pipeline=%s:%s %s since the state file was written: the file's spec is applied "
             "(generation %lld)",
             group, name, why, (long long)generation);
    drv_events_publish(engine, "config.changed", group, name,
                       json_pack("{s:s, s:s, s:I}", "path", engine->config->path, "reason", why, "generation",
                                 (json_int_t)generation));
    s_create(engine, group, name, spec, DRV_SOURCE_CONFIG, generation, "config");
}

//  One pipeline the state file holds.
static void s_restore(drv_engine_t *engine, const json_t *config, const char *group, const char *name, json_t *entry)
{
    json_t *spec = json_object_get(entry, "spec");
    //  The state file keeps the remote config's and the resources'; the file's are whatever it declares now.
    bool declared = json_object_get(json_object_get(engine->config->groups, group), name) != NULL;
    const char *saved = json_string_value(json_object_get(entry, "source"));
    drv_source_t source = drv_source_named(saved, declared ? DRV_SOURCE_CONFIG : DRV_SOURCE_API);
    source = source == DRV_SOURCE_CONFIG && !declared ? DRV_SOURCE_API : source;
    int64_t generation = json_integer_value(json_object_get(entry, "generation"));
    s_interrupted(engine, group, name, generation, json_object_get(entry, "rollout"));
    file_verdict_t verdict = drv_source_kept(source) ? FILE_SAME : s_file_verdict(engine, config, group, name);
    if (verdict == FILE_CHANGED) {
        s_file_wins(engine, group, name, generation + 1, "its entry in the config file changed");
    } else if (verdict == FILE_GONE) {
        drv_info("restart: pipeline=%s:%s is gone from the config file since the state file was "
                 "written: not "
                 "started",
                 group, name);
        drv_events_publish(
            engine, "config.changed", group, name,
            json_pack("{s:s, s:s}", "path", engine->config->path, "reason", "gone from the config file: not started"));
        engine->state_dirty = true; // forgotten
    } else if (json_is_true(json_object_get(entry, "running"))) {
        s_create(engine, group, name, spec, source, generation, "restart");
    } else {
        drv_pipeline_t *p = drv_registry_add_pipeline(engine, group, name, spec);
        p->source = source;
        p->generation = generation;
        p->shut_down = true; // it was shut down: it stays down
    }
    //  The numbers it gave out before (a failed rollout's too) stay taken.
    drv_pipeline_t *p = drv_registry_pipeline(engine, group, name);
    if (p && source == DRV_SOURCE_KUBERNETES) {
        drv_registry_set_owner(p, json_string_value(json_object_get(entry, "owner")));
    }
    json_int_t next = json_integer_value(json_object_get(entry, "next_generation"));
    if (p && next > p->next_generation) {
        p->next_generation = next;
    }
    //  Its history goes on where it was (GET .../rollouts lists it after this run's).
    json_t *past = json_object_get(entry, "rollouts");
    if (p && json_is_array(past)) {
        drv_rollout_set_past(p, past);
    }
}

void drv_restore_start_pipelines(drv_engine_t *engine)
{
    char err[600];
    json_t *config = NULL;
    json_t *state = drv_state_load(engine, &config, err, sizeof err);
    if (!state && err[0]) {
        drv_error("state file unusable, starting from the config file: %s", err);
        drv_events_publish(engine, "state.invalid", NULL, NULL, json_pack("{s:s}", "reason", err));
    }
    int count = 0;
    const char *group;
    json_t *pipelines;
    json_object_foreach(state, group, pipelines)
    {
        drv_registry_group(engine, group, true);
        const char *name;
        json_t *entry;
        json_object_foreach(pipelines, name, entry)
        {
            s_restore(engine, config, group, name, entry);
            count++;
        }
    }
    if (state) {
        drv_info("restored from state file path=%s pipelines=%d", engine->config->state_file, count);
    }
    //  The file's pipelines the state file does not hold: all of them when
    //  there is none; those new in the file since it was written.
    json_object_foreach(engine->config->groups, group, pipelines)
    {
        drv_registry_group(engine, group, true);
        const char *name;
        json_t *spec;
        json_object_foreach(pipelines, name, spec)
        {
            if (!state) {
                s_create(engine, group, name, spec, DRV_SOURCE_CONFIG, 1, "config");
            } else if (!json_object_get(json_object_get(state, group), name) &&
                       s_file_verdict(engine, config, group, name) == FILE_CHANGED) {
                s_file_wins(engine, group, name, 1, "its entry is new in the config file");
            }
        }
    }
    json_decref(state);
    json_decref(config);
}

json_t *drv_restore_changed_in_file(drv_engine_t *engine, const json_t *config, const char *group, const char *name)
{
    if (!config || s_file_verdict(engine, config, group, name) != FILE_CHANGED) {
        return NULL;
    }
    return json_object_get(json_object_get(engine->config->groups, group), name);
}
