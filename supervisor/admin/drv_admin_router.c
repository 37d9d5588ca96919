/*  drv_admin_router — every admin route, transport-agnostic.
    Paths are split into segments and matched segment by segment in
    s_route (method checks answer 405 with Allow); each handler reads the
    registry and fills a response. Errors follow the
    contract: {error: {kind, message, details?}}. */
#include "drv_admin.h"
#include "drv_admin_pipelines.h"
#include "drv_rollout.h"
#include "drv_registry.h"
#include "drv_status.h"
#include "drv_events.h"
#include "drv_metrics.h"
#include "drv_admin_request.h"

#include "drover/drv_spec.h"
#include "drover/drv_time.h"
#include "drover/drv_utf8.h"

#include <unistd.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_SEGMENTS 8

typedef struct {
    char *segments[MAX_SEGMENTS]; // split path, owned
    int count;
} route_path_t;

//  Every string of the request's head must be valid UTF-8 without NUL (the
//  body was checked by its decoder). Returns false with a 400 in response.
static bool s_strings_ok(drv_admin_request_t *request, drv_admin_response_t *response)
{
    if (!drv_utf8_valid(request->path, strlen(request->path), false)) {
        drv_admin_error(response, 400, "invalid_request", "path: not valid UTF-8, or holds a NUL (%%00)");
        return false;
    }
    const char *key;
    json_t *value;
    json_object_foreach(request->query, key, value)
    {
        if (!drv_utf8_valid(key, strlen(key), false)) {
            drv_admin_error(response, 400, "invalid_request", "query: a parameter name is not valid UTF-8");
            return false;
        }
        if (!drv_utf8_valid(json_string_value(value), json_string_length(value), false)) {
            drv_admin_error(response, 400, "invalid_request", "query.%s: not valid UTF-8, or holds a NUL (%%00)",
                            key);
            return false;
        }
    }
    return true;
}

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

static int s_split(const char *path, route_path_t *out)
{
    out->count = 0;
    char *copy = strdup(path);
    char *save = NULL;
    for (char *seg = strtok_r(copy, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
        if (out->count == MAX_SEGMENTS) {
            free(copy);
            return -1;
        }
        out->segments[out->count++] = strdup(seg);
    }
    free(copy);
    return 0;
}

static void s_path_free(route_path_t *path)
{
    for (int i = 0; i < path->count; i++) {
        free(path->segments[i]);
    }
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
        drv_admin_error(response, 400, "invalid_request", "group name \"%s\" must match [a-z0-9_-]{1,63}",
                        name);
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
    s_json(response, ready ? 200 : 503,
           json_pack("{s:b, s:o}", "ready", ready, "reasons", reasons));
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
    s_json(response, 200,
           json_pack("{s:s, s:i, s:s, s:s, s:s, s:{s:s, s:s, s:s}, s:o, s:b, s:i}", "version",
                     DROVER_VERSION, "pid", (int)getpid(), "started_at", started, "config", c->path,
                     "run_dir", c->run_dir, "admin", "zmq", c->admin_zmq, "events", c->admin_events,
                     "http", c->admin_http, "cpus", cpus, "shutting_down", engine->shutting_down,
                     "shutdown_timeout_secs", c->shutdown_timeout_secs));
}

static bool s_method_is(drv_admin_request_t *request, const char *allowed,
                        drv_admin_response_t *response)
{
    char padded[64];
    snprintf(padded, sizeof padded, " %s ", allowed);
    char word[16];
    snprintf(word, sizeof word, " %s ", request->method);
    if (strstr(padded, word)) {
        return true;
    }
    drv_admin_error(response, 405, "invalid_request", "%s is not allowed on %s (allowed: %s)",
                    request->method, request->path, allowed);
    response->allow = allowed;
    return false;
}

//  Returns true when the request was kept to be answered later.
static bool s_route(drv_engine_t *engine, drv_admin_request_t *request, route_path_t *path,
                    drv_admin_response_t *response)
{
    char **seg = path->segments;
    int n = path->count;
    bool mutating = strcmp(request->method, "GET") && strcmp(request->method, "HEAD");
    if (mutating && !request->authorized) {
        drv_admin_error(response, 401, "unauthorized",
                        "%s needs \"Authorization: Bearer <token>\" with the engine's http token",
                        request->method);
        return false;
    }
    if (n == 1 && !strcmp(seg[0], "livez")) {
        if (s_method_is(request, "GET", response)) {
            s_text(response, 200, strdup("ok\n"), "text/plain; charset=utf-8");
        }
    } else if (n == 1 && !strcmp(seg[0], "readyz")) {
        if (s_method_is(request, "GET", response)) {
            s_readyz(engine, response);
        }
    } else if (n == 1 && !strcmp(seg[0], "metrics")) {
        if (s_method_is(request, "GET", response)) {
            s_text(response, 200, drv_metrics_render(engine), "text/plain; version=0.0.4; charset=utf-8");
        }
    } else if (n == 1 && !strcmp(seg[0], "status")) {
        if (s_method_is(request, "GET", response)) {
            s_json(response, 200, drv_status_all(engine));
        }
    } else if (n == 3 && !strcmp(seg[0], "api") && !strcmp(seg[1], "v1") && !strcmp(seg[2], "engine")) {
        if (s_method_is(request, "GET", response)) {
            s_engine_info(engine, response);
        }
    } else if (n >= 3 && !strcmp(seg[0], "api") && !strcmp(seg[1], "v1") && !strcmp(seg[2], "groups")) {
        if (n == 3) {
            if (s_method_is(request, "GET", response)) {
                s_groups_list(engine, response);
            }
        } else if (n == 4) {
            if (!s_method_is(request, "GET PUT DELETE", response)) {
                return false;
            }
            if (!strcmp(request->method, "PUT")) {
                s_group_put(engine, seg[3], response);
            } else if (!strcmp(request->method, "DELETE")) {
                s_group_delete(engine, seg[3], response);
            } else {
                drv_group_t *group = drv_admin_lookup_group(engine, seg[3], response);
                if (group) {
                    s_json(response, 200, s_group_json(group));
                }
            }
        } else if (n == 5 && !strcmp(seg[4], "pipelines")) {
            drv_group_t *group = s_method_is(request, "GET", response) ? drv_admin_lookup_group(engine, seg[3], response)
                                                                       : NULL;
            if (group) {
                s_pipelines_list(engine, group, response);
            }
        } else if (n >= 6 && !strcmp(seg[4], "pipelines")) {
            const char *g = seg[3], *p = seg[5];
            if (n == 6) {
                if (!s_method_is(request, "GET PUT DELETE", response)) {
                    return false;
                }
                if (!strcmp(request->method, "PUT")) {
                    return drv_admin_pipeline_put(engine, request, g, p, response);
                }
                if (!strcmp(request->method, "DELETE")) {
                    return drv_admin_pipeline_shutdown(engine, request, g, p, true, response);
                }
                drv_pipeline_t *pipeline = drv_admin_lookup_pipeline(engine, g, p, response);
                if (pipeline) {
                    s_json(response, 200,
                           json_pack("{s:O, s:o}", "spec", pipeline->spec, "status",
                                     drv_status_pipeline(engine, pipeline)));
                }
            } else if (n == 7 && !strcmp(seg[6], "status")) {
                drv_pipeline_t *pipeline = s_method_is(request, "GET", response)
                                               ? drv_admin_lookup_pipeline(engine, g, p, response)
                                               : NULL;
                if (pipeline) {
                    s_json(response, 200, drv_status_pipeline(engine, pipeline));
                }
            } else if (n == 7 && !strcmp(seg[6], "rollouts")) {
                drv_pipeline_t *pipeline = s_method_is(request, "GET", response)
                                               ? drv_admin_lookup_pipeline(engine, g, p, response)
                                               : NULL;
                if (pipeline) {
                    drv_admin_rollouts_list(engine, pipeline, response);
                }
            } else if (n == 8 && !strcmp(seg[6], "rollouts")) {
                drv_pipeline_t *pipeline = s_method_is(request, "GET", response)
                                               ? drv_admin_lookup_pipeline(engine, g, p, response)
                                               : NULL;
                if (pipeline) {
                    drv_admin_rollout_get(engine, pipeline, seg[7], response);
                }
            } else if (n == 8 && !strcmp(seg[6], "shutdowns")) {
                drv_pipeline_t *pipeline = s_method_is(request, "GET", response)
                                               ? drv_admin_lookup_pipeline(engine, g, p, response)
                                               : NULL;
                if (pipeline) {
                    drv_admin_shutdown_get(engine, pipeline, seg[7], response);
                }
            } else if (n == 7 && !strcmp(seg[6], "shutdown")) {
                if (s_method_is(request, "POST", response)) {
                    return drv_admin_pipeline_shutdown(engine, request, g, p, false, response);
                }
            } else if (n == 7 && !strcmp(seg[6], "rollback")) {
                if (s_method_is(request, "POST", response)) {
                    return drv_admin_pipeline_rollback(engine, request, g, p, response);
                }
            } else {
                drv_admin_error(response, 404, "invalid_request", "no route %s %s", request->method,
                                request->path);
            }
        } else {
            drv_admin_error(response, 404, "invalid_request", "no route %s %s", request->method,
                            request->path);
        }
    } else {
        drv_admin_error(response, 404, "invalid_request", "no route %s %s", request->method,
                        request->path);
    }
    return false;
}

void drv_admin_dispatch(drv_engine_t *engine, drv_admin_request_t *request)
{
    drv_admin_response_t response = {0};
    route_path_t path = {0};
    drv_status_refresh(engine); // answers reflect this very moment
    if (!s_strings_ok(request, &response)) {
        // response says why
    } else if (s_split(request->path, &path) != 0) {
        drv_admin_error(&response, 404, "invalid_request", "no route %s %s", request->method,
                        request->path);
    } else if (s_route(engine, request, &path, &response)) {
        s_path_free(&path);
        drv_admin_response_clear(&response);
        return; // kept: answered when its rollout ends
    }
    s_path_free(&path);
    if (!response.content_type) {
        response.content_type = "application/json";
    }
    request->reply(request, &response);
    drv_admin_response_clear(&response);
}
