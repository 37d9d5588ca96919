/*  drv_admin_routes — see drv_admin_routes.h. */
#include "drv_admin_routes.h"
#include "drv_admin_pipelines.h"
#include "drv_registry.h"
#include "drv_status.h"
#include "drv_events.h"
#include "drv_metrics.h"
#include "drv_rates.h"
#include "drv_opamp.h"
#include "drv_kube_source.h"
#include "drv_upgrade.h"
#include "drv_broker_link.h"

#include "drover/drv_spec.h"
#include "drover/drv_time.h"
#include "drover/drv_version.h"

#include <unistd.h>

#include <stdio.h>
#include <string.h>

static void s_json(drv_admin_response_t *response, int status, json_t *body)
{
    response->status = status;
    response->json = body;
}

static void s_text(drv_admin_response_t *response, int status, char *text, const char *type)
{
    response->status = status;
    response->text = text;
    response->content_type = type;
}

static json_t *s_group_json(drv_group_t *group)
{
    json_t *names = json_array();
    for (drv_pipeline_t *p = zhashx_first(group->pipelines); p; p = zhashx_next(group->pipelines)) {
        json_array_append_new(names, json_string(p->name));
    }
    return json_pack("{s:s, s:o}", "name", group->name, "pipelines", names);
}

//  Sorted by name, so both transports and repeated calls list the same order.
static int s_by_name(const void *a, const void *b)
{
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "name")),
                  json_string_value(json_object_get(*(json_t *const *)b, "name")));
}

static json_t *s_sorted(json_t *array, const char *key)
{
    (void)key;
    size_t n = json_array_size(array);
    json_t **items = calloc(n + 1, sizeof *items);
    for (size_t i = 0; i < n; i++) {
        items[i] = json_incref(json_array_get(array, i));
    }
    qsort(items, n, sizeof *items, s_by_name);
    json_t *sorted = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(sorted, items[i]);
    }
    free(items);
    json_decref(array);
    return sorted;
}

static void s_groups_list(drv_engine_t *engine, drv_admin_response_t *response)
{
    json_t *list = json_array();
    for (drv_group_t *g = zhashx_first(engine->groups); g; g = zhashx_next(engine->groups)) {
        json_array_append_new(list, s_group_json(g));
    }
    s_json(response, 200, s_sorted(list, "name"));
}

static void s_group_put(drv_engine_t *engine, const char *name, drv_admin_response_t *response)
{
    if (!drv_spec_valid_id(name)) {
        drv_admin_error(response, 400, "invalid_request", "group name \"%s\" must match [a-z0-9_-]{1,63}", name);
        return;
    }
    bool existed = drv_registry_group(engine, name, false) != NULL;
    drv_group_t *group = drv_registry_group(engine, name, true);
    if (!existed) {
        drv_events_publish(engine, "group.created", name, NULL, NULL);
        engine->state_dirty = true;
    }
    s_json(response, 200, s_group_json(group));
}

static void s_group_delete(drv_engine_t *engine, const char *name, drv_admin_response_t *response)
{
    drv_group_t *group = drv_admin_lookup_group(engine, name, response);
    if (!group) {
        return;
    }
    if (zhashx_size(group->pipelines) > 0) {
        drv_admin_error(response, 409, "conflict", "group \"%s\" still has %zu pipeline(s)", name,
                        zhashx_size(group->pipelines));
        return;
    }
    if (strcmp(name, "default") == 0) {
        drv_admin_error(response, 409, "conflict", "the default group cannot be deleted");
        return;
    }
    zhashx_delete(engine->groups, name);
    drv_events_publish(engine, "group.deleted", name, NULL, NULL);
    engine->state_dirty = true;
    s_json(response, 200, json_pack("{s:s, s:b}", "name", name, "deleted", 1));
}

static void s_pipelines_list(drv_engine_t *engine, drv_group_t *group, drv_admin_response_t *response)
{
    json_t *list = json_array();
    for (drv_pipeline_t *p = zhashx_first(group->pipelines); p; p = zhashx_next(group->pipelines)) {
        json_t *status = drv_status_pipeline(engine, p);
        json_object_set_new(status, "name", json_string(p->name));
        json_array_append_new(list, status);
    }
    s_json(response, 200, s_sorted(list, "name"));
}

static void s_readyz(drv_engine_t *engine, drv_admin_response_t *response)
{
    json_t *reasons = json_array();
    bool ready = drv_status_ready(engine, reasons);
    s_json(response, ready ? 200 : 503, json_pack("{s:b, s:o}", "ready", ready, "reasons", reasons));
}

//  Every process of the engine with the version of the binary it runs:
//  after an upgrade, those still running the old binaries say so.
static void s_add_instance(drv_engine_t *engine, drv_instance_t *inst, void *arg)
{
    if (inst->pid > 0) {
        json_array_append_new(arg, json_pack("{s:s, s:s, s:i, s:s}", "role", "instance", "id", inst->id, "pid",
                                             (int)inst->pid, "version",
                                             inst->adopted ? drv_upgrade_older_version(engine) : drv_version()));
    }
}

static json_t *s_processes(drv_engine_t *engine)
{
    json_t *list = json_pack("[{s:s, s:i, s:s}]", "role", "droverd", "pid", (int)getpid(), "version", drv_version());
    if (engine->broker->pid > 0) {
        json_array_append_new(list,
                              json_pack("{s:s, s:i, s:s}", "role", "broker", "pid", (int)engine->broker->pid, "version",
                                        engine->broker->renewing ? drv_upgrade_older_version(engine) : drv_version()));
    }
    drv_registry_each_instance(engine, s_add_instance, list);
    return list;
}

static void s_engine_info(drv_engine_t *engine, drv_admin_response_t *response)
{
    drv_config_t *c = engine->config;
    json_t *cpus = json_array();
    for (int i = 0; i < engine->cpus.count; i++) {
        json_array_append_new(cpus, json_integer(engine->cpus.ids[i]));
    }
    char started[40];
    drv_time_rfc3339(engine->started_at, started, sizeof started);
    json_t *info =
        json_pack("{s:s, s:i, s:s, s:s, s:s, s:{s:s, s:s, s:s}, s:o, s:b, s:i, s:o, s:o}", "version", drv_version(),
                  "pid", (int)getpid(), "started_at", started, "config", c->path, "run_dir", c->run_dir, "admin", "zmq",
                  c->admin_zmq, "events", c->admin_events, "http", c->admin_http, "cpus", cpus, "shutting_down",
                  engine->shutting_down, "shutdown_timeout_secs", c->shutdown_timeout_secs, "upgrade",
                  drv_upgrade_json(engine), "processes", s_processes(engine));
    json_t *kubernetes = drv_kube_source_json(engine->kube_source); // DroverPipelines watched, when they are
    if (kubernetes) {
        json_object_set_new(info, "kubernetes", kubernetes);
    }
    s_json(response, 200, info);
}

bool drv_route_livez(drv_engine_t *engine, drv_admin_request_t *request, char **args, drv_admin_response_t *response)
{
    (void)engine, (void)request, (void)args;
    s_text(response, 200, strdup("ok\n"), "text/plain; charset=utf-8");
    return false;
}

bool drv_route_readyz(drv_engine_t *engine, drv_admin_request_t *request, char **args, drv_admin_response_t *response)
{
    (void)request, (void)args;
    s_readyz(engine, response);
    return false;
}

bool drv_route_metrics(drv_engine_t *engine, drv_admin_request_t *request, char **args, drv_admin_response_t *response)
{
    (void)request, (void)args;
    s_text(response, 200, drv_metrics_render(engine), "text/plain; version=0.0.4; charset=utf-8");
    return false;
}

bool drv_route_status(drv_engine_t *engine, drv_admin_request_t *request, char **args, drv_admin_response_t *response)
{
    (void)args;
    if (!strcmp(request->transport, "http")) {
        s_text(response, 200, drv_status_all_text(engine), "application/json"); // kept parts, copied
    } else {
        s_json(response, 200, drv_status_all(engine)); // a map, for the msgpack envelope
    }
    return false;
}

bool drv_route_engine(drv_engine_t *engine, drv_admin_request_t *request, char **args, drv_admin_response_t *response)
{
    (void)request, (void)args;
    s_engine_info(engine, response);
    return false;
}

bool drv_route_upgrade_get(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                           drv_admin_response_t *response)
{
    (void)request, (void)args;
    s_json(response, 200, drv_upgrade_json(engine));
    return false;
}

bool drv_route_upgrade_post(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                            drv_admin_response_t *response)
{
    (void)request, (void)args;
    char why[600];
    if (drv_upgrade_request(engine, request->transport, why, sizeof why) != 0) {
        drv_admin_error(response, 409, "conflict", "%s", why);
        return false;
    }
    response->location = strdup("/api/v1/engine/upgrade");
    s_json(response, 202, drv_upgrade_json(engine));
    return false;
}

bool drv_route_opamp(drv_engine_t *engine, drv_admin_request_t *request, char **args, drv_admin_response_t *response)
{
    (void)request, (void)args;
    s_json(response, 200, drv_opamp_json(engine->opamp));
    return false;
}

bool drv_route_groups(drv_engine_t *engine, drv_admin_request_t *request, char **args, drv_admin_response_t *response)
{
    (void)request, (void)args;
    s_groups_list(engine, response);
    return false;
}

bool drv_route_group_get(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                         drv_admin_response_t *response)
{
    (void)request;
    drv_group_t *group = drv_admin_lookup_group(engine, args[0], response);
    if (group) {
        s_json(response, 200, s_group_json(group));
    }
    return false;
}

bool drv_route_group_put(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                         drv_admin_response_t *response)
{
    (void)request;
    s_group_put(engine, args[0], response);
    return false;
}

bool drv_route_group_delete(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                            drv_admin_response_t *response)
{
    (void)request;
    s_group_delete(engine, args[0], response);
    return false;
}

bool drv_route_pipelines(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                         drv_admin_response_t *response)
{
    (void)request;
    drv_group_t *group = drv_admin_lookup_group(engine, args[0], response);
    if (group) {
        s_pipelines_list(engine, group, response);
    }
    return false;
}

bool drv_route_pipeline_get(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                            drv_admin_response_t *response)
{
    drv_pipeline_t *pipeline = drv_admin_lookup_pipeline(engine, args[0], args[1], response);
    if (pipeline) {
        //  Secrets (exporter headers, URL passwords) only for whoever may change the spec.
        json_t *spec = request->authorized ? json_incref(pipeline->spec) : drv_spec_redact(pipeline->spec);
        json_t *body = json_pack("{s:o, s:o}", "spec", spec, "status", drv_status_pipeline(engine, pipeline));
        //  A rollout under way (a canary holding): the spec it brings, whose
        //  nodes the console draws beside the running ones.
        const json_t *next = pipeline->active ? drv_rollout_new_spec(pipeline->active) : NULL;
        if (next) {
            json_object_set_new(body, "rollout_spec",
                                request->authorized ? json_deep_copy(next) : drv_spec_redact((json_t *)next));
        }
        s_json(response, 200, body);
    }
    return false;
}

//  A pipeline a DroverPipeline resource owns is changed only through the
//  resource (docs/kubernetes.md, "Who owns a pipeline"): true, with the 409
//  naming it, when group/name is one and what is asked would change it.
static bool s_owned(drv_engine_t *engine, char **args, const char *what, drv_admin_response_t *response)
{
    drv_pipeline_t *pipeline = drv_registry_pipeline(engine, args[0], args[1]);
    if (!pipeline || pipeline->source != DRV_SOURCE_KUBERNETES) {
        return false;
    }
    drv_admin_error(response, 409, "owned_by_resource",
                    "pipeline %s is owned by DroverPipeline %s: %s it with kubectl (pause, resume, promote and "
                    "abort stay allowed here)",
                    pipeline->key, pipeline->owner, what);
    return true;
}

bool drv_route_pipeline_put(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                            drv_admin_response_t *response)
{
    if (s_owned(engine, args, "change", response)) {
        return false;
    }
    return drv_admin_pipeline_put(engine, request, args[0], args[1], response);
}

bool drv_route_pipeline_delete(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                               drv_admin_response_t *response)
{
    if (s_owned(engine, args, "delete", response)) {
        return false;
    }
    return drv_admin_pipeline_shutdown(engine, request, args[0], args[1], true, response);
}

bool drv_route_pipeline_status(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                               drv_admin_response_t *response)
{
    (void)request;
    drv_pipeline_t *pipeline = drv_admin_lookup_pipeline(engine, args[0], args[1], response);
    if (pipeline) {
        s_json(response, 200, drv_status_pipeline(engine, pipeline));
    }
    return false;
}

bool drv_route_rollouts(drv_engine_t *engine, drv_admin_request_t *request, char **args, drv_admin_response_t *response)
{
    (void)request;
    drv_pipeline_t *pipeline = drv_admin_lookup_pipeline(engine, args[0], args[1], response);
    if (pipeline) {
        drv_admin_rollouts_list(engine, pipeline, response);
    }
    return false;
}

//  The last 5 minutes of its rates (observe/drv_rates.c), for the console's sparklines.
bool drv_route_pipeline_rates(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                              drv_admin_response_t *response)
{
    (void)request;
    drv_pipeline_t *pipeline = drv_admin_lookup_pipeline(engine, args[0], args[1], response);
    if (pipeline) {
        response->status = 200;
        response->json = drv_rates_json(pipeline);
    }
    return false;
}

bool drv_route_rollout_get(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                           drv_admin_response_t *response)
{
    (void)request;
    drv_pipeline_t *pipeline = drv_admin_lookup_pipeline(engine, args[0], args[1], response);
    if (pipeline) {
        drv_admin_rollout_get(engine, pipeline, args[2], response);
    }
    return false;
}

bool drv_route_shutdown_get(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                            drv_admin_response_t *response)
{
    (void)request;
    drv_pipeline_t *pipeline = drv_admin_lookup_pipeline(engine, args[0], args[1], response);
    if (pipeline) {
        drv_admin_shutdown_get(engine, pipeline, args[2], response);
    }
    return false;
}

bool drv_route_pipeline_shutdown(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                                 drv_admin_response_t *response)
{
    if (s_owned(engine, args, "delete", response)) {
        return false;
    }
    return drv_admin_pipeline_shutdown(engine, request, args[0], args[1], false, response);
}

bool drv_route_pipeline_rollback(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                                 drv_admin_response_t *response)
{
    if (s_owned(engine, args, "roll back (apply the earlier spec to)", response)) {
        return false;
    }
    return drv_admin_pipeline_rollback(engine, request, args[0], args[1], response);
}

bool drv_route_rollout_control(drv_engine_t *engine, drv_admin_request_t *request, char **args,
                               drv_admin_response_t *response)
{
    for (drv_control_t what = DRV_CONTROL_PAUSE; what <= DRV_CONTROL_ABORT; what++) {
        if (!strcmp(args[3], drv_control_name(what))) {
            drv_pipeline_t *pipeline = drv_admin_lookup_pipeline(engine, args[0], args[1], response);
            if (pipeline) {
                drv_admin_rollout_control(engine, pipeline, args[2], what, response);
            }
            return false;
        }
    }
    drv_admin_error(response, 404, "invalid_request",
                    "no route POST %s: a rollout takes pause, resume, promote or abort", request->path);
    return false;
}
