/*  drv_admin_live — the routes that go on as things happen (docs/operations.md, seeing it live):
    GET /api/v1/events (Server-Sent Events), a pipeline's tap (SSE or
    NDJSON over HTTP; over zmq one answer with what was collected), and the
    web console, GET /ui. */
#include "drv_admin.h"
#include "drv_admin_routes.h"
#include "drv_console.h"
#include "drv_sse.h"
#include "drv_taps.h"

#include <string.h>

#define SSE_TYPE "text/event-stream"
#define NDJSON_TYPE "application/x-ndjson"

bool drv_route_events(drv_engine_t *engine, drv_admin_request_t *request, char **args, drv_admin_response_t *response)
{
    (void)args;
    if (strcmp(request->transport, "http") != 0) {
        //  Over zmq, one answer: the kept events (what happens next is on the events socket).
        response->status = 200;
        response->json = json_pack("{s:o}", "events",
                                   drv_sse_kept(engine, json_string_value(json_object_get(request->query, "topics"))));
        return false;
    }
    response->status = 200;
    response->content_type = SSE_TYPE;
    response->stream = drv_stream_new((size_t)engine->config->stream_queue_bytes);
    //  ?history=false: only what happens from now on (droverctl events, as
    //  over the zmq events socket); else the kept events come first.
    const char *history = json_string_value(json_object_get(request->query, "history"));
    bool none = history && (!strcmp(history, "false") || !strcmp(history, "0"));
    drv_sse_add(engine, response->stream, json_string_value(json_object_get(request->query, "topics")),
                none ? INT64_MAX : request->last_event_id);
    return false;
}

//  A zmq tap's answer: the records it collected, when it ends.
static void s_tap_ended(void *arg, json_t *records)
{
    drv_admin_request_t *request = arg;
    drv_admin_response_t response = {.status = 200, .content_type = "application/json"};
    response.json = json_pack("{s:O}", "records", records);
    request->reply(request, &response);
    drv_admin_response_clear(&response);
}

bool drv_route_tap(drv_engine_t *engine, drv_admin_request_t *request, char **args, drv_admin_response_t *response)
{
    if (!request->authorized) {
        //  A tap shows the records themselves, not just how the engine is doing.
        drv_admin_error(response, 401, "unauthorized",
                        "a tap shows records: it needs \"Authorization: Bearer <token>\" with the engine's http token");
        return false;
    }
    drv_pipeline_t *pipeline = drv_admin_lookup_pipeline(engine, args[0], args[1], response);
    if (!pipeline) {
        return false;
    }
    const char *key;
    json_t *value;
    json_object_foreach(request->query, key, value)
    {
        if (strcmp(key, "node") && strcmp(key, "limit") && strcmp(key, "timeout_secs") && strcmp(key, "generation")) {
            drv_admin_error(response, 400, "invalid_request",
                            "unknown query parameter \"%s\" (node, limit, timeout_secs, generation)", key);
            return false;
        }
    }
    bool zmq = strcmp(request->transport, "http") != 0;
    int64_t limit, timeout_secs, generation;
    if (drv_admin_query_int(request, "limit", "records", DRV_TAP_LIMIT, 1, 100000, &limit, response) != 0 ||
        drv_admin_query_int(request, "generation", "generation", 0, 0, INT64_MAX, &generation, response) != 0 ||
        drv_admin_query_int(request, "timeout_secs", "seconds", zmq ? 10 : 0, zmq ? 1 : 0, 3600, &timeout_secs,
                            response) != 0) {
        return false;
    }
    drv_tap_open_t how = {
        .node = json_string_value(json_object_get(request->query, "node")),
        .limit = (int)limit,
        .timeout_secs = (int)timeout_secs,
        .generation = generation,
    };
    char why[800];
    if (zmq) {
        how.on_end = s_tap_ended; // answered when the tap ends
        how.arg = request;
        if (drv_taps_open(engine, pipeline, &how, why, sizeof why) != 0) {
            drv_admin_error(response, 400, "invalid_request", "%s", why);
            return false;
        }
        return true;
    }
    how.sse = !strstr(request->accept, NDJSON_TYPE);
    how.stream = drv_stream_new((size_t)engine->config->stream_queue_bytes);
    if (drv_taps_open(engine, pipeline, &how, why, sizeof why) != 0) {
        drv_stream_unref(&how.stream);
        drv_admin_error(response, 400, "invalid_request", "%s", why);
        return false;
    }
    response->status = 200;
    response->content_type = how.sse ? SSE_TYPE : NDJSON_TYPE;
    response->stream = how.stream; // the response's reference
    return false;
}

bool drv_route_ui(drv_engine_t *engine, drv_admin_request_t *request, char **args, drv_admin_response_t *response)
{
    (void)engine;
    (void)request;
    (void)args;
    response->status = 200;
    response->content_type = "text/html; charset=utf-8";
    response->text = strndup(drv_console_html, drv_console_html_len);
    return false;
}
