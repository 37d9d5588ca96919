/*  drv_admin_router — every admin route, transport-agnostic, as one table of
    {method, pattern, handler}: a path is split into segments and matched
    against each pattern ({name} captures a segment); the first row whose
    method and pattern match answers (drv_admin_routes.c). A path that some
    row matches with another method gets 405 with Allow listing the methods
    that would do; one no row matches gets 404. Mutating methods need the
    token first (401), on any path. Errors follow docs/operations.md:
    {error: {kind, message, details?}}. */
#include "drv_admin.h"
#include "drv_admin_routes.h"
#include "drv_status.h"

#include "drover/drv_utf8.h"

#include <stdio.h>
#include <string.h>

#define MAX_SEGMENTS 10
#define MAX_ARGS 4
#define PIPELINE "/api/v1/groups/{group}/pipelines/{pipeline}"

typedef struct {
    const char *method;
    const char *pattern;
    drv_route_fn *handler;
} route_t;

static const route_t s_routes[] = {
    {"GET", "/livez", drv_route_livez},
    {"GET", "/readyz", drv_route_readyz},
    {"GET", "/metrics", drv_route_metrics},
    {"GET", "/status", drv_route_status},
    {"GET", "/api/v1/engine", drv_route_engine},
    {"GET", "/api/v1/engine/upgrade", drv_route_upgrade_get},
    {"POST", "/api/v1/engine/upgrade", drv_route_upgrade_post},
    {"GET", "/api/v1/opamp", drv_route_opamp},
    {"GET", "/api/v1/groups", drv_route_groups},
    {"GET", "/api/v1/groups/{group}", drv_route_group_get},
    {"PUT", "/api/v1/groups/{group}", drv_route_group_put},
    {"DELETE", "/api/v1/groups/{group}", drv_route_group_delete},
    {"GET", "/api/v1/groups/{group}/pipelines", drv_route_pipelines},
    {"GET", PIPELINE, drv_route_pipeline_get},
    {"PUT", PIPELINE, drv_route_pipeline_put},
    {"DELETE", PIPELINE, drv_route_pipeline_delete},
    {"GET", PIPELINE "/status", drv_route_pipeline_status},
    {"GET", PIPELINE "/rollouts", drv_route_rollouts},
    {"GET", PIPELINE "/rates", drv_route_pipeline_rates},
    {"GET", PIPELINE "/rollouts/{id}", drv_route_rollout_get},
    {"POST", PIPELINE "/rollouts/{id}/{action}", drv_route_rollout_control}, // pause, resume, promote, abort
    {"GET", PIPELINE "/shutdowns/{id}", drv_route_shutdown_get},
    {"POST", PIPELINE "/shutdown", drv_route_pipeline_shutdown},
    {"POST", PIPELINE "/rollback", drv_route_pipeline_rollback},
    {"GET", PIPELINE "/tap", drv_route_tap},
    {"GET", "/api/v1/events", drv_route_events},
    {"GET", "/ui", drv_route_ui},
};
#define ROUTES (sizeof s_routes / sizeof s_routes[0])

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
            drv_admin_error(response, 400, "invalid_request", "query.%s: not valid UTF-8, or holds a NUL (%%00)", key);
            return false;
        }
    }
    return true;
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

//  Whether pattern matches path; its captures go to args.
static bool s_match(const char *pattern, const route_path_t *path, char **args)
{
    int i = 0, captured = 0;
    for (const char *p = pattern; *p == '/'; i++) {
        const char *seg = p + 1;
        size_t len = strcspn(seg, "/");
        if (i == path->count) {
            return false;
        }
        if (seg[0] == '{') {
            if (captured < MAX_ARGS) {
                args[captured++] = path->segments[i];
            }
        } else if (strlen(path->segments[i]) != len || strncmp(path->segments[i], seg, len) != 0) {
            return false;
        }
        p = seg + len;
    }
    return i == path->count;
}

//  Returns true when the request was kept to be answered later.
static bool s_route(drv_engine_t *engine, drv_admin_request_t *request, route_path_t *path,
                    drv_admin_response_t *response)
{
    bool mutating = strcmp(request->method, "GET") && strcmp(request->method, "HEAD");
    if (mutating && !request->authorized) {
        drv_admin_error(response, 401, "unauthorized",
                        "%s needs \"Authorization: Bearer <token>\" with the engine's http token", request->method);
        return false;
    }
    static char allow[ROUTES][40]; // per row: the methods of every row with its pattern
    char *args[MAX_ARGS] = {0};
    const route_t *other = NULL;
    for (size_t r = 0; r < ROUTES; r++) {
        if (!s_match(s_routes[r].pattern, path, args)) {
            continue;
        }
        //  HEAD is GET without the body (libmicrohttpd leaves it out), but
        //  for the streams, which have no end to measure.
        bool head = !strcmp(request->method, "HEAD") && !strcmp(s_routes[r].method, "GET") &&
                    s_routes[r].handler != drv_route_tap && s_routes[r].handler != drv_route_events;
        if (head || !strcmp(s_routes[r].method, request->method)) {
            return s_routes[r].handler(engine, request, args, response);
        }
        other = other ? other : &s_routes[r];
    }
    if (!other) {
        drv_admin_error(response, 404, "invalid_request", "no route %s %s", request->method, request->path);
        return false;
    }
    char *list = allow[other - s_routes];
    if (!list[0]) {
        for (size_t r = 0; r < ROUTES; r++) {
            if (!strcmp(s_routes[r].pattern, other->pattern)) {
                size_t used = strlen(list);
                snprintf(list + used, sizeof allow[0] - used, "%s%s", used ? ", " : "", s_routes[r].method);
            }
        }
    }
    drv_admin_error(response, 405, "invalid_request", "%s is not allowed on %s (allowed: %s)", request->method,
                    request->path, list);
    response->allow = list;
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
        drv_admin_error(&response, 404, "invalid_request", "no route %s %s", request->method, request->path);
    } else if (s_route(engine, request, &path, &response)) {
        s_path_free(&path);
        drv_admin_response_clear(&response);
        return; // kept: answered when its operation ends
    }
    s_path_free(&path);
    if (!response.content_type) {
        response.content_type = "application/json";
    }
    request->reply(request, &response);
    drv_admin_response_clear(&response);
}
