/*  drv_reload — see drv_reload.h. A reload goes through the same planner and
    executor as PUT (health-gated, rolled back on failure), so a bad change in
    the file behaves like a bad PUT: the old generation keeps serving. Only
    pipelines that came from the file are removed when the file drops them;
    pipelines created through the API are the API's. */
#include "drv_reload.h"
#include "drv_admission.h"
#include "drv_events.h"
#include "drv_registry.h"
#include "drv_rollout.h"
#include "drv_shutdown.h"
#include "drv_state.h"

#include "drover/drv_log.h"

#include <string.h>

//  generation: the one to come up as (a restored pipeline keeps its number).
static void s_create(drv_engine_t *engine, const char *group, const char *name, json_t *spec,
                     drv_source_t source, int64_t generation)
{
    drv_pipeline_t *pipeline = drv_registry_add_pipeline(engine, group, name, spec);
    pipeline->source = source;
    pipeline->generation = generation > 1 ? generation - 1 : 0; // create targets the next one
    drv_rollout_opts_t opts = {.supervised = true};
    drv_rollout_t *rollout = drv_rollout_plan(engine, pipeline, group, name, spec, &opts);
    drv_rollout_start(engine, pipeline, rollout);
}

//  A rollout was under way (or paused) when droverd stopped: its spec was
//  never applied, so the pipeline comes back as its last applied
//  generation, which is a rollback; say so, and how to try again.
static void s_interrupted(drv_engine_t *engine, const char *group, const char *name,
                          int64_t generation, json_t *rollout)
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
             (long long)json_integer_value(json_object_get(rollout, "step")), op ? op : "?",
             (long long)generation);
    drv_events_publish(engine, "rollout.interrupted", group, name,
                       json_pack("{s:O?, s:O?, s:O?, s:O?, s:s, s:I}", "rollout_id",
                                 json_object_get(rollout, "rollout_id"), "state",
                                 json_object_get(rollout, "state"), "step",
                                 json_object_get(rollout, "step"), "target_generation",
                                 json_object_get(rollout, "target_generation"), "outcome",
                                 "rolled_back", "restored_generation", (json_int_t)generation));
}

void drv_reload_start_pipelines(drv_engine_t *engine)
{
    char err[600];
    json_t *state = drv_state_load(engine, err, sizeof err);
    if (!state && err[0]) {
        drv_error("state file unusable, starting from the config file: %s", err);
        drv_events_publish(engine, "state.invalid", NULL, NULL, json_pack("{s:s}", "reason", err));
    }
    if (state) {
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
                json_t *spec = json_object_get(entry, "spec");
                //  The state file keeps the remote config's; the file's are whatever it declares now.
                bool declared = json_object_get(json_object_get(engine->config->groups, group), name) != NULL;
                drv_source_t source =
                    !strcmp(json_string_value(json_object_get(entry, "source")) ?: "", "opamp") ? DRV_SOURCE_OPAMP
                    : declared                                                               ? DRV_SOURCE_CONFIG
                                                                                             : DRV_SOURCE_API;
                int64_t generation = json_integer_value(json_object_get(entry, "generation"));
                s_interrupted(engine, group, name, generation, json_object_get(entry, "rollout"));
                if (json_is_true(json_object_get(entry, "running"))) {
                    s_create(engine, group, name, spec, source, generation);
                } else {
                    drv_pipeline_t *p = drv_registry_add_pipeline(engine, group, name, spec);
                    p->source = source;
                    p->generation = generation;
                    p->shut_down = true; // it was shut down: it stays down
                }
                count++;
            }
        }
        drv_info("restored from state file path=%s pipelines=%d", engine->config->state_file,
                 count);
        json_decref(state);
        return;
    }
    const char *group;
    json_t *pipelines;
    json_object_foreach(engine->config->groups, group, pipelines)
    {
        drv_registry_group(engine, group, true);
        const char *name;
        json_t *spec;
        json_object_foreach(pipelines, name, spec)
        {
            s_create(engine, group, name, spec, DRV_SOURCE_CONFIG, 1);
        }
    }
}

json_t *drv_reload_apply_groups(drv_engine_t *engine, const json_t *groups, drv_source_t source)
{
    const char *from = source == DRV_SOURCE_OPAMP ? "remote config" : "reload";
    json_t *applied = json_array(), *skipped = json_array();
    int removed = 0;
    const char *group;
    json_t *pipelines;
    json_object_foreach((json_t *)groups, group, pipelines)
    {
        drv_registry_group(engine, group, true);
        const char *name;
        json_t *spec;
        json_object_foreach(pipelines, name, spec)
        {
            drv_pipeline_t *pipeline = drv_registry_pipeline(engine, group, name);
            //  The same admission as a PUT: what it would refuse is skipped.
            char why[400] = "";
            drv_problems_t *problems = drv_problems_new();
            int admit = drv_admission_check(engine, pipeline, spec, problems, why, sizeof why);
            if (admit == DRV_ADMIT_INVALID) {
                snprintf(why, sizeof why, "%s: %s", drv_problems_path(problems, 0),
                         drv_problems_message(problems, 0));
            }
            drv_problems_destroy(&problems);
            if (admit != DRV_ADMIT_OK) {
                drv_warn("%s: skipped pipeline=%s:%s reason=\"%s\"", from, group, name, why);
                json_array_append_new(skipped, json_pack("{s:s, s:s, s:s}", "group", group,
                                                         "pipeline", name, "reason", why));
                continue;
            }
            drv_rollout_opts_t opts = {.supervised = false};
            drv_rollout_t *rollout = drv_rollout_plan(engine, pipeline, group, name, spec, &opts);
            if (!pipeline) {
                pipeline = drv_registry_add_pipeline(engine, group, name, spec);
            }
            pipeline->source = source;
            engine->state_dirty |= source == DRV_SOURCE_OPAMP; // that source is kept in the state file
            drv_registry_touch(engine, pipeline);        // status shows the source
            drv_rollout_start(engine, pipeline,
                              rollout); // it names the rollout; the pipeline's history keeps it
            json_array_append_new(applied, json_pack("{s:s, s:s, s:s}", "group", group, "pipeline",
                                                     name, "rollout_id", drv_rollout_id(rollout)));
        }
    }
    //  Pipelines the source used to declare and no longer does.
    size_t count;
    drv_pipeline_t **all = drv_registry_pipelines(engine, &count);
    for (size_t k = 0; k < count; k++) {
        drv_pipeline_t *p = all[k];
        bool declared = json_object_get(json_object_get(groups, p->group), p->name) != NULL;
        if (p->source == source && !declared && !p->shutdown_active && !p->active) {
            drv_info("%s: pipeline=%s is gone from it: shutting it down", from, p->key);
            drv_shutdown_start(engine, p, 0, true);
            removed++;
        }
    }
    free(all);
    return json_pack("{s:o, s:o, s:i}", "applied", applied, "skipped", skipped, "removed", removed);
}

void drv_reload_apply(drv_engine_t *engine, const char *why)
{
    char err[1024];
    const char *path = engine->config->path;
    drv_info("%s: reloading config=%s", why, path);
    drv_config_t *fresh = drv_config_load(path, &engine->cpus, err, sizeof err);
    if (!fresh) {
        engine->config_reloads[1]++;
        drv_error("reload refused, nothing changed: %s", err);
        drv_events_publish(engine, "config.invalid", NULL, NULL,
                           json_pack("{s:s, s:s}", "path", path, "reason", err));
        return;
    }
    if (strcmp(fresh->run_dir, engine->config->run_dir) ||
        strcmp(fresh->admin_zmq, engine->config->admin_zmq) ||
        strcmp(fresh->admin_events, engine->config->admin_events) ||
        strcmp(fresh->admin_http, engine->config->admin_http)) {
        drv_warn("reload: engine settings (run_dir, admin endpoints) take effect only when droverd "
                 "restarts");
    }
    json_t *result = drv_reload_apply_groups(engine, fresh->groups, DRV_SOURCE_CONFIG);
    json_decref(engine->config->groups);
    engine->config->groups = json_incref(fresh->groups);
    drv_config_destroy(&fresh);
    engine->config_reloads[0]++;
    int applied = (int)json_array_size(json_object_get(result, "applied"));
    int skipped = (int)json_array_size(json_object_get(result, "skipped"));
    int removed = (int)json_integer_value(json_object_get(result, "removed"));
    json_decref(result);
    drv_info("config reloaded path=%s applied=%d skipped=%d removed=%d", path, applied, skipped,
             removed);
    drv_events_publish(engine, "config.reloaded", NULL, NULL,
                       json_pack("{s:s, s:i, s:i, s:i}", "path", path, "applied", applied,
                                 "skipped", skipped, "removed", removed));
}
