/*  drv_status — what operators and probes see: PipelineStatus documents,
    conditions, phases and readiness, all computed from the registry. */
#include "drv_status.h"
#include "drv_rollout.h"
#include "drv_shutdown.h"
#include "drv_registry.h"
#include "drv_state.h"
#include "drv_broker_link.h"

#include "drover/drv_node_counters.h"
#include "drover/drv_spec.h"
#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <stdio.h>
#include <string.h>

static json_t *s_time(int64_t wall_ms)
{
    if (wall_ms <= 0) {
        return json_null();
    }
    char buf[40];
    drv_time_rfc3339(wall_ms, buf, sizeof buf);
    return json_string(buf);
}

//  The ready instance serving a core, if any (any generation).
static drv_instance_t *s_ready_on(const drv_pipeline_t *pipeline, int core)
{
    for (drv_instance_t *inst = zlistx_first(pipeline->instances); inst; inst = zlistx_next(pipeline->instances)) {
        if (inst->core == core && inst->state == DRV_INST_READY) {
            return inst;
        }
    }
    return NULL;
}

static drv_instance_t *s_any_on(const drv_pipeline_t *pipeline, int core)
{
    for (drv_instance_t *inst = zlistx_first(pipeline->instances); inst; inst = zlistx_next(pipeline->instances)) {
        if (inst->core == core) {
            return inst;
        }
    }
    return NULL;
}

int drv_status_ready_instances(const drv_pipeline_t *pipeline)
{
    int count = 0;
    for (drv_instance_t *inst = zlistx_first(pipeline->instances); inst; inst = zlistx_next(pipeline->instances)) {
        count += inst->state == DRV_INST_READY;
    }
    return count;
}

drv_totals_t drv_status_totals(const drv_pipeline_t *pipeline)
{
    drv_totals_t t = {pipeline->retired_in, pipeline->retired_out, pipeline->retired_errors};
    for (drv_instance_t *inst = zlistx_first(pipeline->instances); inst; inst = zlistx_next(pipeline->instances)) {
        t.records_in += inst->records_in;
        t.records_out += inst->records_out;
        t.errors += inst->errors;
    }
    return t;
}

drv_buffer_totals_t drv_status_buffer(const drv_pipeline_t *pipeline)
{
    const char *type = json_string_value(
        json_object_get(json_object_get(json_object_get(pipeline->spec, "policies"), "buffer"), "type"));
    drv_buffer_totals_t b = {.disk = type && !strcmp(type, "disk"),
                             .replayed = pipeline->retired_replayed,
                             .dropped = pipeline->retired_dropped,
                             .corrupt_segments = pipeline->retired_corrupt};
    for (drv_instance_t *inst = zlistx_first(pipeline->instances); inst; inst = zlistx_next(pipeline->instances)) {
        if (!inst->buffer) {
            continue;
        }
        b.disk = true; // a generation still draining a disk buffer after a change to memory
        b.bytes += json_integer_value(json_object_get(inst->buffer, "bytes"));
        b.records += json_integer_value(json_object_get(inst->buffer, "records"));
        b.replayed += json_integer_value(json_object_get(inst->buffer, "replayed"));
        b.dropped += json_integer_value(json_object_get(inst->buffer, "dropped"));
        b.corrupt_segments += json_integer_value(json_object_get(inst->buffer, "corrupt_segments"));
        b.full |= json_is_true(json_object_get(inst->buffer, "full"));
        int64_t age = json_integer_value(json_object_get(inst->buffer, "oldest_age_ms"));
        b.oldest_age_ms = age > b.oldest_age_ms ? age : b.oldest_age_ms;
    }
    return b;
}

static void s_set(drv_condition_t *cond, bool status, const char *reason, const char *message, int64_t now)
{
    if (cond->since == 0 || cond->status != status) {
        cond->since = now;
    }
    cond->status = status;
    snprintf(cond->reason, sizeof cond->reason, "%s", reason);
    snprintf(cond->message, sizeof cond->message, "%s", message);
}

//  The latest rollout, when it failed (it rolled back, or could not): its
//  reason in why. NULL when it did not fail.
static const drv_rollout_t *s_failed_rollout(const drv_pipeline_t *p, char *why, size_t whylen)
{
    const drv_rollout_t *last = p->active ? NULL : zlistx_last(p->rollouts);
    if (!last || (drv_rollout_state(last) != DRV_RO_FAILED && drv_rollout_state(last) != DRV_RO_ROLLBACK_FAILED)) {
        return NULL;
    }
    snprintf(why, whylen, "%s (%s to generation %lld) %s: %s", drv_rollout_id(last),
             drv_action_name(drv_rollout_action(last)), (long long)drv_rollout_target_generation(last),
             drv_rollout_state_name(drv_rollout_state(last)), drv_rollout_failure(last));
    return last;
}

static void s_refresh(drv_engine_t *engine, drv_pipeline_t *p, int64_t now)
{
    (void)engine;
    char message[640] = "";
    char failed_why[600];
    const drv_rollout_t *failed = s_failed_rollout(p, failed_why, sizeof failed_why);
    //  A create that failed: nothing runs, and every condition says why.
    bool create_failed = failed && !p->running && !p->shut_down && !p->shutdown_active;
    int missing = 0;
    for (int i = 0; i < p->core_count; i++) {
        if (!s_ready_on(p, p->cores[i])) {
            drv_instance_t *inst = s_any_on(p, p->cores[i]);
            if (missing++ == 0) {
                snprintf(message, sizeof message, "core %d: %s%s%s", p->cores[i],
                         inst ? drv_inst_state_name(inst->state) : "no instance", inst && inst->detail[0] ? ": " : "",
                         inst ? inst->detail : "");
            }
        }
    }
    if (p->shutdown_active) {
        s_set(&p->cond_ready, false, "Stopped", "the pipeline is shut down", now);
    } else if (create_failed) {
        s_set(&p->cond_ready, false, "CreateFailed", failed_why, now);
    } else if (missing == 0) {
        s_set(&p->cond_ready, true, "AllCoresReady", "every desired core has a ready instance", now);
    } else {
        char full[300];
        snprintf(full, sizeof full, "%d of %d cores not ready; %s", missing, p->core_count, message);
        s_set(&p->cond_ready, false, "CoresNotReady", full, now);
    }
    if (p->shutdown_active) {
        s_set(&p->cond_progressing, true, "ShuttingDown", "instances are draining", now);
    } else if (p->active) {
        char progress[300];
        snprintf(progress, sizeof progress, "%s: %s to generation %lld", drv_rollout_id(p->active),
                 drv_action_name(drv_rollout_action(p->active)), (long long)drv_rollout_target_generation(p->active));
        s_set(&p->cond_progressing, true, "RolloutInProgress", progress, now);
    } else if (failed) {
        s_set(&p->cond_progressing, false, drv_rollout_aborted(failed) ? "RolloutAborted" : "RolloutFailed", failed_why,
              now);
    } else {
        s_set(&p->cond_progressing, false, "Idle", "no rollout or shutdown in progress", now);
    }
    drv_buffer_totals_t buffer = drv_status_buffer(p);
    if (create_failed) {
        s_set(&p->cond_degraded, true, "CreateFailed", failed_why, now);
    } else if (p->frontend_error[0]) {
        s_set(&p->cond_degraded, true, "FrontDoorUnavailable", p->frontend_error, now);
    } else if (buffer.full) {
        snprintf(message, sizeof message, "the disk buffer is full (%lld bytes, policies.buffer.max_bytes %lld): %s",
                 (long long)buffer.bytes,
                 (long long)json_integer_value(
                     json_object_get(json_object_get(json_object_get(p->spec, "policies"), "buffer"), "max_bytes")),
                 json_is_true(
                     json_object_get(json_object_get(json_object_get(p->spec, "policies"), "buffer"), "drop_oldest"))
                     ? "the oldest records are dropped"
                     : "receivers push back");
        s_set(&p->cond_degraded, true, "BufferFull", message, now);
    } else if (p->degraded) {
        snprintf(message, sizeof message, "restarted more than %lld times within %lld s",
                 (long long)json_integer_value(
                     json_object_get(json_object_get(json_object_get(p->spec, "policies"), "restart"), "max_restarts")),
                 (long long)json_integer_value(
                     json_object_get(json_object_get(json_object_get(p->spec, "policies"), "restart"), "window_secs")));
        s_set(&p->cond_degraded, true, "CrashLoop", message, now);
    } else if (p->exporter_failing) {
        s_set(&p->cond_degraded, true, "ExporterFailing", p->exporter_failing_why, now);
    } else {
        s_set(&p->cond_degraded, false, "Healthy", "no crash loop, front doors bound, exporters delivering", now);
    }
}

//  Conditions are made again for a pipeline that was touched; one that
//  changes by it is touched again (its cached text is then stale too).
static void s_refresh_touched(drv_engine_t *engine, drv_pipeline_t *p, int64_t now)
{
    drv_condition_t before[3] = {p->cond_ready, p->cond_progressing, p->cond_degraded};
    if (p->created_at == 0) {
        p->created_at = now;
    }
    s_refresh(engine, p, now);
    drv_condition_t after[3] = {p->cond_ready, p->cond_progressing, p->cond_degraded};
    if (memcmp(before, after, sizeof before) != 0) {
        p->changes++;
    }
}

void drv_status_refresh(drv_engine_t *engine)
{
    if (!engine->dirty || zlistx_size(engine->dirty) == 0) {
        return; // nothing touched: no work, however many pipelines there are
    }
    size_t count;
    drv_pipeline_t **touched = drv_registry_take_dirty(engine, &count);
    int64_t now = drv_time_wall_ms();
    for (size_t k = 0; k < count; k++) {
        s_refresh_touched(engine, touched[k], now);
    }
    free(touched);
}

const char *drv_status_phase(const drv_pipeline_t *pipeline)
{
    if (pipeline->active) {
        return drv_rollout_action(pipeline->active) == DRV_ACTION_CREATE ? "pending" : "updating";
    }
    if (!pipeline->running && !pipeline->shutdown_active) {
        drv_rollout_t *last = zlistx_last(pipeline->rollouts);
        return pipeline->shut_down || !last || drv_rollout_state(last) == DRV_RO_SUCCEEDED ? "stopped" : "failed";
    }
    drv_rollout_t *latest = zlistx_last(pipeline->rollouts);
    if (latest && drv_rollout_state(latest) == DRV_RO_ROLLBACK_FAILED) {
        return "failed"; // a mix of generations serves: the operator must act
    }
    if (pipeline->shutdown_active) {
        return drv_status_ready_instances(pipeline) > 0 || zlistx_size(pipeline->instances) > 0 ? "updating"
                                                                                                : "stopped";
    }
    if (pipeline->cond_degraded.status) {
        return "degraded";
    }
    if (pipeline->cond_ready.status) {
        return "running";
    }
    //  Not all cores ready: still starting, or lost an instance after running.
    for (drv_instance_t *inst = zlistx_first(pipeline->instances); inst; inst = zlistx_next(pipeline->instances)) {
        if (inst->restarts > 0 || inst->state == DRV_INST_FAILED) {
            return "degraded";
        }
    }
    return "pending";
}

static json_t *s_condition(const char *type, const drv_condition_t *cond)
{
    return json_pack("{s:s, s:b, s:s, s:s, s:o}", "type", type, "status", cond->status, "reason", cond->reason,
                     "message", cond->message, "since", s_time(cond->since));
}

static json_t *s_instance(const drv_instance_t *inst, int64_t lag_ms)
{
    return json_pack("{s:i, s:I, s:s, s:o, s:s, s:i, s:o, s:o, s:I, s:I, s:I, s:s, s:o, s:o}", "core", inst->core,
                     "generation", (json_int_t)inst->generation, "id", inst->id, "pid",
                     inst->pid > 0 ? json_integer(inst->pid) : json_null(), "state", drv_inst_state_name(inst->state),
                     "restarts", inst->restarts, "started_at", s_time(inst->started_at), "last_heartbeat_at",
                     s_time(inst->last_heartbeat_at), "records_in", (json_int_t)inst->records_in, "records_out",
                     (json_int_t)inst->records_out, "errors", (json_int_t)inst->errors, "detail", inst->detail,
                     "last_exit_code", inst->restarts > 0 ? json_integer(inst->last_exit_code) : json_null(), "nodes",
                     drv_status_nodes(inst->nodes, lag_ms));
}

json_t *drv_status_pipeline(drv_engine_t *engine, drv_pipeline_t *p)
{
    (void)engine;
    json_t *cores = json_array();
    for (int i = 0; i < p->core_count; i++) {
        json_array_append_new(cores, json_integer(p->cores[i]));
    }
    json_t *instances = json_array();
    for (drv_instance_t *inst = zlistx_first(p->instances); inst; inst = zlistx_next(p->instances)) {
        json_array_append_new(instances,
                              s_instance(inst, drv_spec_policy(p->spec, "health", "exporter_failing_secs") * 500));
    }
    json_t *conditions =
        json_pack("[o, o, o]", s_condition("ready", &p->cond_ready), s_condition("progressing", &p->cond_progressing),
                  s_condition("degraded", &p->cond_degraded));
    json_t *status = json_pack("{s:s, s:s, s:I, s:s, s:s, s:o, s:i, s:o, s:o, s:n, s:n, s:o}", "group", p->group,
                               "pipeline", p->name, "generation", (json_int_t)p->generation, "spec_hash", p->spec_hash,
                               "phase", drv_status_phase(p), "desired_cores", cores, "ready_instances",
                               drv_status_ready_instances(p), "conditions", conditions, "instances", instances,
                               "rollout", "shutdown", "created_at", s_time(p->created_at));
    //  Where its spec came from: the config file, the OpAMP server's remote config, a resource, or the API.
    static const char *const sources[] = DRV_SOURCE_NAMES;
    json_object_set_new(status, "source", json_string(sources[p->source]));
    if (p->source == DRV_SOURCE_KUBERNETES) {
        json_object_set_new(status, "owner", json_string(p->owner)); // its DroverPipeline, namespace/name
    }
    //  What POST …/rollback would go back to exists (the console enables its button by it).
    json_object_set_new(status, "can_rollback", json_boolean(p->previous_spec && p->running && !p->active));
    //  Every crash of its instances, those while draining too (an instance
    //  that aborts as it is retired is not restarted, but it crashed).
    json_object_set_new(status, "crashes", json_integer(p->crashes));
    drv_totals_t totals = drv_status_totals(p);
    json_object_set_new(status, "totals",
                        json_pack("{s:I, s:I, s:I}", "records_in", (json_int_t)totals.records_in, "records_out",
                                  (json_int_t)totals.records_out, "errors", (json_int_t)totals.errors));
    drv_buffer_totals_t buffer = drv_status_buffer(p);
    json_object_set_new(
        status, "buffer",
        buffer.disk ? json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "type", "disk", "bytes",
                                (json_int_t)buffer.bytes, "records", (json_int_t)buffer.records, "oldest_age_secs",
                                (json_int_t)(buffer.oldest_age_ms / 1000), "replayed_records",
                                (json_int_t)buffer.replayed, "dropped_records", (json_int_t)buffer.dropped,
                                "corrupt_segments", (json_int_t)buffer.corrupt_segments)
                    : json_pack("{s:s, s:n, s:n, s:n}", "type", "memory", "bytes", "records", "oldest_age_secs"));
    drv_rollout_t *latest = zlistx_last(p->rollouts);
    if (latest) {
        json_object_set_new(status, "rollout", drv_rollout_json(latest));
    }
    drv_shutdown_t *shutdown = zlistx_last(p->shutdowns);
    if (shutdown) {
        json_object_set_new(status, "shutdown", drv_shutdown_json(shutdown));
    }
    return status;
}

//  The pipeline's `"key":{PipelineStatus}` text as JSON.
static char *s_render(drv_engine_t *engine, drv_pipeline_t *p)
{
    json_t *entry = json_pack("{s:o}", p->key, drv_status_pipeline(engine, p));
    char *text = json_dumps(entry, JSON_COMPACT);
    json_decref(entry);
    if (text) {
        size_t len = strlen(text);
        text[len - 1] = 0;                // without the closing brace
        memmove(text, text + 1, len - 1); // nor the opening one
    }
    return text;
}

//  DROVER_CHECK_STATUS_CACHE=1: every cached answer is compared with one
//  made afresh, and a difference (a shown field changed without a touch)
//  stops droverd, loudly. The tests run with it.
static void s_check_cache(drv_engine_t *engine, drv_pipeline_t *p)
{
    static int check = -1;
    if (check < 0) {
        const char *env = getenv("DROVER_CHECK_STATUS_CACHE");
        check = env && !strcmp(env, "1");
    }
    if (!check) {
        return;
    }
    char *fresh = s_render(engine, p);
    if (fresh && strcmp(fresh, p->status_text) != 0) {
        drv_error("status cache stale pipeline=%s: a shown field changed without drv_registry_touch\n"
                  "cached: %s\nfresh:  %s",
                  p->key, p->status_text, fresh);
        abort();
    }
    free(fresh);
}

//  The pipeline's `"key":{PipelineStatus}` text, made again only when the
//  pipeline was touched since.
static const char *s_entry_text(drv_engine_t *engine, drv_pipeline_t *p)
{
    if (p->dirty) {
        s_refresh_touched(engine, p, drv_time_wall_ms()); // conditions first: they are shown
    }
    if (p->status_text && p->status_changes == p->changes) {
        s_check_cache(engine, p);
        return p->status_text;
    }
    uint64_t changes = p->changes;
    char *text = s_render(engine, p);
    free(p->status_text);
    p->status_text = text;
    p->status_changes = changes;
    return p->status_text ? p->status_text : "";
}

char *drv_status_all_text(drv_engine_t *engine)
{
    size_t count;
    drv_pipeline_t **all = drv_registry_pipelines(engine, &count);
    char generated[40];
    drv_time_rfc3339(drv_time_wall_ms(), generated, sizeof generated);
    size_t cap = 256, len = 0;
    for (size_t k = 0; k < count; k++) {
        cap += strlen(s_entry_text(engine, all[k])) + 1;
    }
    char *text = malloc(cap);
    if (!text) {
        abort();
    }
    len = (size_t)snprintf(text, cap, "{\"generated_at\":\"%s\",\"pipelines\":{", generated);
    for (size_t k = 0; k < count; k++) {
        const char *entry = all[k]->status_text ? all[k]->status_text : "";
        if (!entry[0]) {
            continue;
        }
        size_t n = strlen(entry);
        if (len > 0 && text[len - 1] != '{') {
            text[len++] = ',';
        }
        memcpy(text + len, entry, n);
        len += n;
    }
    memcpy(text + len, "}}", 3);
    free(all);
    return text;
}

json_t *drv_status_all(drv_engine_t *engine)
{
    json_t *pipelines = json_object();
    size_t count;
    drv_pipeline_t **all = drv_registry_pipelines(engine, &count);
    for (size_t k = 0; k < count; k++) {
        drv_pipeline_t *p = all[k];
        json_object_set_new(pipelines, p->key, drv_status_pipeline(engine, p));
    }
    free(all);
    return json_pack("{s:o, s:o}", "generated_at", s_time(drv_time_wall_ms()), "pipelines", pipelines);
}

bool drv_status_ready(drv_engine_t *engine, json_t *reasons)
{
    bool ready = true;
    if (engine->shutting_down) {
        json_array_append_new(reasons, json_string("droverd is shutting down"));
        ready = false;
    }
    if (engine->state->error[0]) {
        //  Data still flows; only what a restart would restore is at risk.
        //  Reported, without taking the engine out of service.
        char reason[700];
        snprintf(reason, sizeof reason, "state file not saved (retrying): %s", engine->state->error);
        json_array_append_new(reasons, json_string(reason));
    }
    bool needs_broker = false;
    size_t count;
    drv_pipeline_t **all = drv_registry_pipelines(engine, &count);
    for (size_t k = 0; k < count; k++) {
        drv_pipeline_t *p = all[k];
        needs_broker |= p->has_zmq && !p->shutdown_active && (p->running || p->active);
    }
    if (needs_broker && !engine->broker->connected) {
        json_array_append_new(reasons, json_string("the broker is not connected"));
        ready = false;
    }
    for (size_t k = 0; k < count; k++) {
        drv_pipeline_t *p = all[k];
        if (p->shutdown_active || (!p->running && !p->active)) {
            continue; // shut down on purpose, or never came up: not expected to run
        }
        if (!p->cond_ready.status) {
            char reason[400];
            snprintf(reason, sizeof reason, "%s: %s", p->key, p->cond_ready.message);
            json_array_append_new(reasons, json_string(reason));
            ready = false;
        }
    }
    free(all);
    return ready;
}
