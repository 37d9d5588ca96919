/*  drv_admin_pipelines — the mutating pipeline routes: PUT (create, noop,
    resize, replace, dry run) and the rollout history. A PUT that waits hands
    its request to the rollout, which answers it when it ends or times out. */
#include "drv_admin_pipelines.h"
#include "drv_admin_waiters.h"
#include "drv_probe_run.h"
#include "drv_rollout.h"
#include "drv_shutdown.h"
#include "drv_admission.h"
#include "drv_operations.h"
#include "drv_registry.h"
#include "drv_admin_request.h"

#include "drover/drv_problems.h"
#include "drover/drv_limits.h"
#include "drover/drv_spec.h"

#include <stdio.h>
#include <string.h>

drv_group_t *drv_admin_lookup_group(drv_engine_t *engine, const char *name, drv_admin_response_t *response)
{
    drv_group_t *group = drv_registry_group(engine, name, false);
    if (!group) {
        drv_admin_error(response, 404, "group_not_found", "no group \"%s\"", name);
    }
    return group;
}

drv_pipeline_t *drv_admin_lookup_pipeline(drv_engine_t *engine, const char *group, const char *name,
                                          drv_admin_response_t *response)
{
    if (!drv_admin_lookup_group(engine, group, response)) {
        return NULL;
    }
    drv_pipeline_t *pipeline = drv_registry_pipeline(engine, group, name);
    if (!pipeline) {
        drv_admin_error(response, 404, "pipeline_not_found", "no pipeline \"%s\" in group \"%s\"", name, group);
    }
    return pipeline;
}

//  Query booleans: true/false/1/0; anything else is a 400.
static int s_query_bool(drv_admin_request_t *request, const char *name, bool fallback, bool *out,
                        drv_admin_response_t *response)
{
    const char *value = json_string_value(json_object_get(request->query, name));
    if (!value) {
        *out = fallback;
        return 0;
    }
    if (!strcmp(value, "true") || !strcmp(value, "1") || !strcmp(value, "")) {
        *out = true;
    } else if (!strcmp(value, "false") || !strcmp(value, "0")) {
        *out = false;
    } else {
        drv_admin_error(response, 400, "invalid_request", "query %s=%s: must be true or false", name, value);
        return -1;
    }
    return 0;
}

int drv_admin_query_int(drv_admin_request_t *request, const char *name, const char *unit, int64_t fallback, int64_t min,
                        int64_t max, int64_t *out, drv_admin_response_t *response)
{
    const char *value = json_string_value(json_object_get(request->query, name));
    if (!value) {
        *out = fallback;
        return 0;
    }
    char *end;
    long long n = strtoll(value, &end, 10);
    if (*value == 0 || *end || n < min || n > max) {
        drv_admin_error(response, 400, "invalid_request", "query %s=%s: must be whole %s, %lld to %lld", name, value,
                        unit, (long long)min, (long long)max);
        return -1;
    }
    *out = n;
    return 0;
}

//  dry_run: true, false, or instantiate (a dry run that also builds the candidate).
static int s_query_dry_run(drv_admin_request_t *request, bool *dry_run, bool *instantiate,
                           drv_admin_response_t *response)
{
    const char *value = json_string_value(json_object_get(request->query, "dry_run"));
    *instantiate = value && !strcmp(value, "instantiate");
    if (*instantiate) {
        *dry_run = true;
        return 0;
    }
    if (value && strcmp(value, "true") && strcmp(value, "false") && strcmp(value, "1") && strcmp(value, "0") &&
        strcmp(value, "")) {
        drv_admin_error(response, 400, "invalid_request", "query dry_run=%s: must be true, false or instantiate",
                        value);
        return -1;
    }
    return s_query_bool(request, "dry_run", false, dry_run, response);
}

static int s_query_secs(drv_admin_request_t *request, const char *name, int64_t fallback, int64_t *out,
                        drv_admin_response_t *response)
{
    return drv_admin_query_int(request, name, "seconds", fallback, 1, DRV_LIMIT_TIMEOUT_SECS, out, response);
}

static int s_body_secs(json_t *body, const char *name, int64_t *out, drv_admin_response_t *response)
{
    json_t *value = json_object_get(body, name);
    *out = 0;
    if (!value) {
        return 0;
    }
    if (!json_is_integer(value) || json_integer_value(value) < 1 ||
        json_integer_value(value) > DRV_LIMIT_TIMEOUT_SECS) {
        drv_admin_error(response, 400, "invalid_request", "%s: must be whole seconds, 1 to %d", name,
                        DRV_LIMIT_TIMEOUT_SECS);
        return -1;
    }
    *out = json_integer_value(value);
    return 0;
}

//  422 naming the first problem; every one in details. what: "invalid PipelineSpec", ...
static void s_unprocessable(drv_admin_response_t *response, const char *what, drv_problems_t *problems)
{
    const char *path = drv_problems_path(problems, 0);
    drv_admin_error(response, 422, "invalid_request", "%s: %s%s%s%s", what, path, path[0] ? ": " : "",
                    drv_problems_message(problems, 0), drv_problems_count(problems) > 1 ? " (see details)" : "");
    json_object_set_new(json_object_get(response->json, "error"), "details", drv_problems_to_json(problems));
}

//  An instantiate dry run waiting for its probe: the request, and the plan it answers with.
typedef struct {
    drv_admin_request_t *request;
    json_t *plan;
} instantiating_t;

static void s_instantiated(drv_engine_t *engine, void *arg, drv_problems_t *problems)
{
    (void)engine;
    instantiating_t *waiting = arg;
    drv_admin_response_t response = {.content_type = "application/json"};
    if (!problems) {
        drv_admin_error(&response, 503, "internal", "droverd stopped before the probe instance finished");
    } else if (drv_problems_count(problems) > 0) {
        s_unprocessable(&response, "the candidate cannot be instantiated", problems);
    } else {
        response.status = 200;
        response.json = json_incref(waiting->plan);
        json_object_set_new(response.json, "instantiated", json_true());
    }
    waiting->request->reply(waiting->request, &response);
    drv_admin_response_clear(&response);
    json_decref(waiting->plan);
    free(waiting);
}

//  dry_run=instantiate: the request is kept until the probe instance ends
//  (droverd's loop goes on meanwhile); true when it was kept.
static bool s_instantiate(drv_engine_t *engine, drv_admin_request_t *request, drv_pipeline_t *pipeline,
                          const char *group, const char *name, const json_t *spec, drv_rollout_t *rollout,
                          drv_admin_response_t *response)
{
    instantiating_t *waiting = calloc(1, sizeof *waiting);
    waiting->request = request;
    waiting->plan = drv_rollout_json(rollout);
    char why[300];
    if (drv_probe_run_start(engine, pipeline, group, name, spec, drv_rollout_target_generation(rollout), s_instantiated,
                            waiting, why, sizeof why) != 0) {
        drv_admin_error(response, 503, "internal", "%s", why);
        response->retry_after_secs = 1;
        json_decref(waiting->plan);
        free(waiting);
        return false;
    }
    return true;
}

//  The part of PUT after parsing: validate, then drv_operations_apply, and
//  its outcome as an answer (now, or when the rollout ends). Also rollback's.
static bool s_apply(drv_engine_t *engine, drv_admin_request_t *request, const char *group, const char *name,
                    json_t *raw_spec, const drv_rollout_opts_t *opts, bool wait, int64_t timeout_secs,
                    drv_admin_response_t *response)
{
    drv_problems_t *problems = drv_problems_new();
    json_t *spec = drv_spec_normalize(raw_spec, &engine->spec_env, "", problems);
    char why[400] = "";
    drv_rollout_t *rollout = NULL;
    drv_change_t change = {.group = group,
                           .name = name,
                           .spec = spec,
                           .opts = *opts,
                           .source = DRV_SOURCE_API,
                           .source_if_changed = true,
                           .admit = true};
    drv_change_outcome_t outcome =
        spec ? drv_operations_apply(engine, &change, problems, why, sizeof why, &rollout) : DRV_CHANGE_INVALID;
    if (outcome == DRV_CHANGE_INVALID) {
        s_unprocessable(response, "invalid PipelineSpec", problems);
    } else if (outcome == DRV_CHANGE_REFUSED) {
        drv_admin_error(response, 409, "conflict", "%s", why);
    }
    drv_problems_destroy(&problems);
    bool kept = false; // the request waits (the answer comes later)
    if (outcome == DRV_CHANGE_PLANNED && opts->instantiate) {
        kept = s_instantiate(engine, request, drv_registry_pipeline(engine, group, name), group, name, spec, rollout,
                             response);
    } else if (outcome == DRV_CHANGE_PLANNED) {
        response->status = 200;
        response->json = drv_rollout_json(rollout);
    } else if (outcome == DRV_CHANGE_STARTED && !wait && !drv_rollout_finished(rollout)) {
        response->status = 202;
        response->json = drv_rollout_json(rollout);
        if (asprintf(&response->location, "/api/v1/groups/%s/pipelines/%s/rollouts/%s", group, name,
                     drv_rollout_id(rollout)) < 0) {
            response->location = NULL;
        }
    } else if (outcome == DRV_CHANGE_STARTED) {
        drv_admin_wait_rollout(engine, rollout, request, timeout_secs * 1000);
        kept = true;
    }
    if (outcome == DRV_CHANGE_PLANNED) {
        drv_rollout_destroy(&rollout);
    }
    json_decref(spec);
    return kept;
}

bool drv_admin_pipeline_put(drv_engine_t *engine, drv_admin_request_t *request, const char *group, const char *name,
                            drv_admin_response_t *response)
{
    if (!drv_registry_group(engine, group, false)) {
        drv_admin_error(response, 404, "group_not_found", "no group \"%s\" (create it with PUT /api/v1/groups/%s)",
                        group, group);
        return false;
    }
    if (!drv_spec_valid_id(name)) {
        drv_admin_error(response, 400, "invalid_request", "pipeline name \"%s\" must match [a-z0-9_-]{1,63}", name);
        return false;
    }
    json_t *body = request->body;
    if (!json_is_object(body) || !json_object_get(body, "pipeline")) {
        drv_admin_error(response, 400, "invalid_request",
                        "body must be {\"pipeline\": PipelineSpec, \"step_timeout_secs\"?, \"drain_timeout_secs\"?}");
        return false;
    }
    const char *key;
    json_t *value;
    json_object_foreach(body, key, value)
    {
        if (strcmp(key, "pipeline") && strcmp(key, "step_timeout_secs") && strcmp(key, "drain_timeout_secs")) {
            drv_admin_error(response, 400, "invalid_request",
                            "unknown body key \"%s\" (pipeline, step_timeout_secs, drain_timeout_secs)", key);
            return false;
        }
    }
    int64_t step_secs, drain_secs, timeout_secs;
    bool wait, dry_run, instantiate;
    if (s_body_secs(body, "step_timeout_secs", &step_secs, response) ||
        s_body_secs(body, "drain_timeout_secs", &drain_secs, response) ||
        s_query_bool(request, "wait", true, &wait, response) ||
        s_query_dry_run(request, &dry_run, &instantiate, response) ||
        s_query_secs(request, "timeout_secs", 60, &timeout_secs, response)) {
        return false;
    }
    drv_rollout_opts_t opts = {.step_timeout_secs = step_secs,
                               .drain_timeout_secs = drain_secs,
                               .dry_run = dry_run,
                               .instantiate = instantiate};
    return s_apply(engine, request, group, name, json_object_get(body, "pipeline"), &opts, wait, timeout_secs,
                   response);
}

void drv_admin_rollouts_list(drv_engine_t *engine, drv_pipeline_t *pipeline, drv_admin_response_t *response)
{
    (void)engine;
    response->status = 200;
    response->json = drv_rollout_history(pipeline); // this run's, then those the state file kept
}

void drv_admin_rollout_get(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *id,
                           drv_admin_response_t *response)
{
    (void)engine;
    drv_rollout_t *rollout = drv_rollout_find(pipeline, id);
    json_t *past = rollout ? NULL : drv_rollout_find_past(pipeline, id);
    if (!rollout && !past) {
        drv_admin_error(response, 404, "rollout_not_found", "no rollout \"%s\" on %s", id, pipeline->key);
        return;
    }
    response->status = 200;
    response->json = rollout ? drv_rollout_json(rollout) : past;
}

void drv_admin_rollout_control(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *id, drv_control_t what,
                               drv_admin_response_t *response)
{
    bool current = !strcmp(id, "current");
    drv_rollout_t *rollout = current ? pipeline->active : drv_rollout_find(pipeline, id);
    if (!rollout) {
        drv_admin_error(response, 404, "rollout_not_found",
                        current ? "%s has no rollout under way" : "no rollout \"%s\" on %s",
                        current ? pipeline->key : id, pipeline->key);
        return;
    }
    char why[400];
    if (drv_rollout_control(engine, pipeline, rollout, what, why, sizeof why) != 0) {
        drv_admin_error(response, 409, "conflict", "%s", why);
        json_object_set_new(response->json, "rollout", drv_rollout_json(rollout));
        return;
    }
    response->status = 200;
    response->json = drv_rollout_json(rollout);
}

//  A rollout or shutdown under way: 409 (drv_admission_busy).
static bool s_busy(drv_pipeline_t *pipeline, drv_admin_response_t *response)
{
    char why[300];
    if (drv_admission_busy(pipeline, why, sizeof why)) {
        drv_admin_error(response, 409, "conflict", "%s", why);
        return true;
    }
    return false;
}

bool drv_admin_pipeline_shutdown(drv_engine_t *engine, drv_admin_request_t *request, const char *group,
                                 const char *name, bool forget, drv_admin_response_t *response)
{
    drv_pipeline_t *pipeline = drv_admin_lookup_pipeline(engine, group, name, response);
    bool wait;
    int64_t timeout_secs;
    if (!pipeline || s_busy(pipeline, response) || s_query_bool(request, "wait", true, &wait, response) ||
        s_query_secs(request, "timeout_secs", 60, &timeout_secs, response)) {
        return false;
    }
    //  Completion is always noticed by the loop (drv_operations_tick), which
    //  answers waiters before a DELETE frees the pipeline and this record.
    drv_shutdown_t *shutdown = drv_shutdown_start(engine, pipeline, 0, forget);
    if (!wait) {
        response->status = 202;
        response->json = drv_shutdown_json(shutdown);
        if (asprintf(&response->location, "/api/v1/groups/%s/pipelines/%s/shutdowns/%s", group, name,
                     drv_shutdown_id(shutdown)) < 0) {
            response->location = NULL;
        }
        return false;
    }
    drv_admin_wait_shutdown(engine, shutdown, request, timeout_secs * 1000);
    return true;
}

bool drv_admin_pipeline_rollback(drv_engine_t *engine, drv_admin_request_t *request, const char *group,
                                 const char *name, drv_admin_response_t *response)
{
    drv_pipeline_t *pipeline = drv_admin_lookup_pipeline(engine, group, name, response);
    if (!pipeline || s_busy(pipeline, response)) {
        return false;
    }
    //  ?to=ROLLOUT_ID: the spec that rollout rolled out; else the previous generation's.
    const char *to = json_string_value(json_object_get(request->query, "to"));
    json_t *target = pipeline->previous_spec;
    if (to) {
        drv_rollout_t *rollout = drv_rollout_find(pipeline, to);
        json_t *past = rollout ? NULL : drv_rollout_find_past(pipeline, to);
        json_decref(past);
        if (!rollout && !past) {
            drv_admin_error(response, 404, "rollout_not_found", "no rollout \"%s\" on %s", to, pipeline->key);
            return false;
        }
        target = rollout ? drv_rollout_spec_kept(rollout) : NULL; // a summary keeps no spec
        if (!target) {
            drv_admin_error(response, 409, "conflict",
                            "%s's spec is not kept: only the newest %d rollouts that succeeded keep theirs", to,
                            DRV_ROLLOUT_SPECS_KEPT);
            return false;
        }
    } else if (!target) {
        drv_admin_error(response, 409, "conflict", "%s has no previous generation to roll back to", pipeline->key);
        return false;
    }
    bool wait, dry_run;
    int64_t timeout_secs;
    if (s_query_bool(request, "wait", true, &wait, response) ||
        s_query_bool(request, "dry_run", false, &dry_run, response) ||
        s_query_secs(request, "timeout_secs", 60, &timeout_secs, response)) {
        return false;
    }
    json_t *previous = json_incref(target);
    drv_rollout_opts_t opts = {.dry_run = dry_run, .no_canary = true, .cause = "rollback"}; // not tried out first
    bool kept = s_apply(engine, request, group, name, previous, &opts, wait, timeout_secs, response);
    json_decref(previous);
    return kept;
}

void drv_admin_shutdown_get(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *id,
                            drv_admin_response_t *response)
{
    (void)engine;
    drv_shutdown_t *shutdown = drv_shutdown_find(pipeline, id);
    if (!shutdown) {
        drv_admin_error(response, 404, "shutdown_not_found", "no shutdown \"%s\" on %s", id, pipeline->key);
        return;
    }
    response->status = 200;
    response->json = drv_shutdown_json(shutdown);
}
