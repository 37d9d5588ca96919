/*  drv_reload — see drv_reload.h. A reload goes through the same planner and
    executor as PUT (health-gated, rolled back on failure), so a bad change in
    the file behaves like a bad PUT: the old generation keeps serving. Only
    pipelines that came from the file are removed when the file drops them;
    pipelines created through the API are the API's, and so is one of the
    file's that the API changed: a reload leaves it alone while its file
    entry is unchanged, and replaces the API's change when the entry
    changed (logged and evented config.changed). A pipeline a DroverPipeline
    resource owns is skipped, said so in the log and the result. */
#include "drv_reload.h"
#include "drv_operations.h"
#include "drv_admission.h"
#include "drv_events.h"
#include "drv_registry.h"
#include "drv_rollout.h"
#include "drv_shutdown.h"

#include "drover/drv_log.h"
#include "drover/drv_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  True when the source's entry for group/name is what it said before.
static bool s_entry_same(const json_t *previous, const char *group, const char *name, const json_t *spec)
{
    const json_t *before = json_object_get(json_object_get(previous, group), name);
    if (!before) {
        return false; // new in the file: the file's
    }
    char *a = drv_spec_hash(before), *b = drv_spec_hash(spec);
    bool same = a && b && !strcmp(a, b);
    free(a);
    free(b);
    return same;
}

json_t *drv_reload_apply_groups(drv_engine_t *engine, const json_t *groups, const json_t *previous, drv_source_t source)
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
            if (pipeline && pipeline->source == DRV_SOURCE_KUBERNETES) { // docs/kubernetes.md, "Who owns a pipeline"
                char why[400];
                snprintf(why, sizeof why, "owned by DroverPipeline %s: change or delete the resource", pipeline->owner);
                drv_warn("%s: skipped pipeline=%s:%s reason=\"%s\"", from, group, name, why);
                json_array_append_new(skipped,
                                      json_pack("{s:s, s:s, s:s}", "group", group, "pipeline", name, "reason", why));
                continue;
            }
            if (pipeline && pipeline->source == DRV_SOURCE_API && s_entry_same(previous, group, name, spec)) {
                continue; // changed through the API since, and the source did not change it: the API's stands
            }
            bool replaces_api = pipeline && pipeline->source == DRV_SOURCE_API;
            int64_t replaced = pipeline ? pipeline->generation : 0;
            //  The same admission as a PUT: what it would refuse is skipped.
            char why[400] = "";
            drv_problems_t *problems = drv_problems_new();
            drv_rollout_t *rollout = NULL;
            drv_change_t change = {.group = group,
                                   .name = name,
                                   .spec = spec,
                                   .source = source,
                                   .admit = true,
                                   .opts = {.cause = source == DRV_SOURCE_OPAMP ? "opamp" : "config"}};
            drv_change_outcome_t outcome = drv_operations_apply(engine, &change, problems, why, sizeof why, &rollout);
            if (outcome == DRV_CHANGE_INVALID) {
                snprintf(why, sizeof why, "%s: %s", drv_problems_path(problems, 0), drv_problems_message(problems, 0));
            }
            drv_problems_destroy(&problems);
            if (outcome != DRV_CHANGE_STARTED) {
                drv_warn("%s: skipped pipeline=%s:%s reason=\"%s\"", from, group, name, why);
                json_array_append_new(skipped,
                                      json_pack("{s:s, s:s, s:s}", "group", group, "pipeline", name, "reason", why));
                continue;
            }
            if (replaces_api && drv_rollout_action(rollout) != DRV_ACTION_NOOP) {
                const char *where = source == DRV_SOURCE_OPAMP ? "the remote config" : "the config file";
                drv_info("%s: pipeline=%s:%s changed in %s: its entry replaces the API's change (generation %lld)",
                         from, group, name, where, (long long)replaced);
                char reason[200];
                snprintf(reason, sizeof reason, "changed in %s: it replaces the change made through the API", where);
                drv_events_publish(engine, "config.changed", group, name,
                                   json_pack("{s:s, s:s, s:I}", "path",
                                             source == DRV_SOURCE_OPAMP ? "opamp" : engine->config->path, "reason",
                                             reason, "replaced_generation", (json_int_t)replaced));
            }
            json_array_append_new(applied, json_pack("{s:s, s:s, s:s}", "group", group, "pipeline", name, "rollout_id",
                                                     drv_rollout_id(rollout)));
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
        drv_events_publish(engine, "config.invalid", NULL, NULL, json_pack("{s:s, s:s}", "path", path, "reason", err));
        return;
    }
    if (strcmp(fresh->run_dir, engine->config->run_dir) || strcmp(fresh->admin_zmq, engine->config->admin_zmq) ||
        strcmp(fresh->admin_events, engine->config->admin_events) ||
        strcmp(fresh->admin_http, engine->config->admin_http)) {
        drv_warn("reload: engine settings (run_dir, admin endpoints) take effect only when droverd "
                 "restarts");
    }
    json_t *result = drv_reload_apply_groups(engine, fresh->groups, engine->config->groups, DRV_SOURCE_CONFIG);
    engine->state_dirty = true; // the state file records what the file declares (drv_restore.h)
    json_decref(engine->config->groups);
    engine->config->groups = json_incref(fresh->groups);
    drv_config_destroy(&fresh);
    engine->config_reloads[0]++;
    int applied = (int)json_array_size(json_object_get(result, "applied"));
    int skipped = (int)json_array_size(json_object_get(result, "skipped"));
    int removed = (int)json_integer_value(json_object_get(result, "removed"));
    json_decref(result);
    drv_info("config reloaded path=%s applied=%d skipped=%d removed=%d", path, applied, skipped, removed);
    drv_events_publish(
        engine, "config.reloaded", NULL, NULL,
        json_pack("{s:s, s:i, s:i, s:i}", "path", path, "applied", applied, "skipped", skipped, "removed", removed));
}
