/*  drv_events — the events PUB socket: a topic frame, then a msgpack map with
    at least {time, group, pipeline}. Engine-wide events carry null for group
    and pipeline. Publishing never blocks the loop (PUB drops for slow peers). */
#include "drv_events.h"

#include "drover/drv_mpjson.h"
#include "drover/drv_time.h"

#include <string.h>

void drv_events_publish(drv_engine_t *engine, const char *topic, const char *group, const char *pipeline,
                        json_t *fields)
{
    if (!engine->events && !engine->event_listener && !engine->resource_listener) {
        json_decref(fields);
        return;
    }
    json_t *event = fields ? fields : json_object();
    char stamp[40];
    drv_time_rfc3339(drv_time_wall_ms(), stamp, sizeof stamp);
    json_object_set_new(event, "time", json_string(stamp));
    json_object_set_new(event, "group", group ? json_string(group) : json_null());
    json_object_set_new(event, "pipeline", pipeline ? json_string(pipeline) : json_null());
    char *data;
    size_t size;
    if (drv_mpjson_encode(event, &data, &size) == 0) {
        void *handle = engine->events ? zsock_resolve(engine->events) : NULL;
        if (handle && zmq_send(handle, topic, strlen(topic), ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0) {
            zmq_send(handle, data, size, ZMQ_DONTWAIT);
        }
        free(data);
    }
    if (engine->event_listener) {
        engine->event_listener(engine, topic, event);
    }
    if (engine->resource_listener) {
        engine->resource_listener(engine, topic, event);
    }
    json_decref(event);
}
