/*  drv_taps — live taps (drv_taps.h), on the loop thread. Samples arrive
    from instances as one line of JSON per record; each tap of the pipeline
    that names the node takes what its token bucket allows. */
#include "drv_taps.h"
#include "drv_lifecycle.h"
#include "drv_registry.h"

#include "drover/drv_time.h"

#include <stdio.h>
#include <string.h>

#define BURST 10 // records a tap lets through at once before its rate applies
#define KEEPALIVE_MS 15000

typedef struct {
    char group[64];
    char pipeline[64];
    json_t *nodes;      // ids sampled (array)
    int64_t generation; // 0: any
    int limit;
    int sent;
    int64_t deadline_ms;  // mono, 0: none
    drv_stream_t *stream; // HTTP
    bool sse;
    void (*on_end)(void *arg, json_t *records); // zmq: told the records at the end
    void *arg;
    json_t *collected; // zmq: the records so far
    double tokens;
    int64_t refill_ms;
    int64_t next_keepalive_ms;
    bool done;
} tap_t;

struct drv_taps_t {
    zlistx_t *taps; // tap_t, owned
};

static void s_finish(tap_t *tap)
{
    if (tap->stream) {
        drv_stream_end(tap->stream);
        drv_stream_unref(&tap->stream);
    }
    if (tap->on_end) {
        tap->on_end(tap->arg, tap->collected);
        tap->on_end = NULL;
    }
    tap->done = true;
}

static void s_tap_free(void **item)
{
    tap_t *tap = *item;
    if (tap) {
        s_finish(tap);
        json_decref(tap->nodes);
        json_decref(tap->collected);
        free(tap);
        *item = NULL;
    }
}

static bool s_has(const json_t *nodes, const char *id)
{
    size_t i;
    json_t *v;
    json_array_foreach(nodes, i, v)
    {
        if (!strcmp(json_string_value(v), id)) {
            return true;
        }
    }
    return false;
}

//  The union of the nodes p's taps sample; when it changed, every running
//  instance of p is told.
static void s_retell(drv_engine_t *engine, drv_pipeline_t *p)
{
    json_t *nodes = json_array();
    for (tap_t *t = zlistx_first(engine->taps->taps); t; t = zlistx_next(engine->taps->taps)) {
        if (t->done || strcmp(t->group, p->group) || strcmp(t->pipeline, p->name)) {
            continue;
        }
        size_t i;
        json_t *v;
        json_array_foreach(t->nodes, i, v)
        {
            if (!s_has(nodes, json_string_value(v))) {
                json_array_append(nodes, v);
            }
        }
    }
    if (json_array_size(nodes) == 0) {
        json_decref(nodes);
        nodes = NULL;
    }
    if (json_equal(nodes, p->tap_nodes) || (!nodes && !p->tap_nodes)) {
        json_decref(nodes);
        return;
    }
    json_decref(p->tap_nodes);
    p->tap_nodes = nodes;
    for (drv_instance_t *inst = zlistx_first(p->instances); inst; inst = zlistx_next(p->instances)) {
        drv_lifecycle_tell_taps(engine, inst);
    }
}

static void s_purge(drv_engine_t *engine)
{
    zlistx_t *taps = engine->taps->taps;
    json_t *touched = json_array(); // "group:pipeline" keys whose taps ended
    tap_t *t = zlistx_first(taps);
    while (t) {
        if (t->done) {
            char key[140];
            snprintf(key, sizeof key, "%s:%s", t->group, t->pipeline);
            json_array_append_new(touched, json_string(key));
            zlistx_delete(taps, zlistx_cursor(taps));
            t = zlistx_first(taps);
        } else {
            t = zlistx_next(taps);
        }
    }
    size_t i;
    json_t *key;
    json_array_foreach(touched, i, key)
    {
        char group[64], name[64];
        if (sscanf(json_string_value(key), "%63[^:]:%63s", group, name) == 2) {
            drv_pipeline_t *p = drv_registry_pipeline(engine, group, name);
            if (p) {
                s_retell(engine, p);
            }
        }
    }
    json_decref(touched);
}

//  One sampled record for one tap: through its bucket, to its client.
static void s_give(tap_t *tap, const json_t *line)
{
    int64_t now = drv_time_mono_ms();
    tap->tokens += (double)(now - tap->refill_ms) * DRV_TAP_RATE / 1000.0;
    tap->refill_ms = now;
    if (tap->tokens > BURST) {
        tap->tokens = BURST;
    }
    if (tap->tokens < 1) {
        return;
    }
    tap->tokens -= 1;
    if (tap->on_end) {
        json_array_append(tap->collected, (json_t *)line);
    } else {
        char *text = json_dumps(line, JSON_COMPACT);
        if (!text) {
            return;
        }
        char *frame = NULL;
        int n = tap->sse ? asprintf(&frame, "event: record\ndata: %s\n\n", text) : asprintf(&frame, "%s\n", text);
        free(text);
        if (n < 0) {
            return;
        }
        int rc = drv_stream_push(tap->stream, frame, (size_t)n);
        free(frame);
        if (rc == -2) {
            tap->done = true; // the client left
            return;
        }
        if (rc == -1) {
            return; // its queue is full: this sample is skipped
        }
    }
    if (++tap->sent >= tap->limit) {
        s_finish(tap);
    }
}

static void s_on_samples(drv_engine_t *engine, drv_instance_t *inst, const json_t *samples)
{
    drv_pipeline_t *p = inst->pipeline;
    char stamp[40];
    drv_time_rfc3339(drv_time_wall_ms(), stamp, sizeof stamp);
    bool ended = false;
    size_t i;
    json_t *sample;
    json_array_foreach(samples, i, sample)
    {
        const char *node = json_string_value(json_array_get(sample, 0));
        const char *text = json_string_value(json_array_get(sample, 1));
        json_t *record = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
        if (!node || !record) {
            json_decref(record);
            continue;
        }
        json_t *line = json_pack("{s:s, s:I, s:i, s:s, s:o}", "time", stamp, "generation", (json_int_t)inst->generation,
                                 "core", inst->core, "node", node, "record", record);
        for (tap_t *t = zlistx_first(engine->taps->taps); t; t = zlistx_next(engine->taps->taps)) {
            if (!t->done && !strcmp(t->group, p->group) && !strcmp(t->pipeline, p->name) && s_has(t->nodes, node) &&
                (!t->generation || t->generation == inst->generation)) {
                s_give(t, line);
                ended |= t->done;
            }
        }
        json_decref(line);
    }
    if (ended) {
        s_purge(engine);
    }
}

void drv_taps_init(drv_engine_t *engine)
{
    engine->taps = calloc(1, sizeof *engine->taps);
    engine->taps->taps = zlistx_new();
    zlistx_set_destructor(engine->taps->taps, s_tap_free);
    engine->tap_listener = s_on_samples;
}

//  The nodes of the specs p runs (the active generation's, and a canary's
//  or a rollout's new one while it runs), of generation alone when it is
//  not 0: {id: definition}. Empty when no instance of generation runs.
static json_t *s_specs_nodes(drv_pipeline_t *p, int64_t generation, char *generations, size_t size)
{
    json_t *all = json_object();
    if (!generation || generation == p->generation) {
        json_object_update(all, json_object_get(p->spec, "nodes"));
    }
    generations[0] = 0;
    for (drv_instance_t *inst = zlistx_first(p->instances); inst; inst = zlistx_next(p->instances)) {
        char gen[24];
        snprintf(gen, sizeof gen, "%lld", (long long)inst->generation);
        if (!strstr(generations, gen)) {
            size_t used = strlen(generations);
            snprintf(generations + used, size - used, "%s%s", used ? ", " : "", gen);
        }
        if (!generation || inst->generation == generation) {
            json_object_update_missing(all, json_object_get(inst->spec, "nodes"));
        }
    }
    return all;
}

//  The pipeline's receivers, or node alone; NULL (with why) for a node it does not have.
static json_t *s_nodes(drv_pipeline_t *p, const char *node, int64_t generation, char *why, size_t whylen)
{
    char generations[300];
    json_t *spec_nodes = s_specs_nodes(p, generation, generations, sizeof generations);
    if (generation && json_object_size(spec_nodes) == 0) {
        snprintf(why, whylen, "query.generation: no instance of generation %lld runs (generations: %s)",
                 (long long)generation, generations[0] ? generations : "none");
        json_decref(spec_nodes);
        return NULL;
    }
    json_t *nodes = json_array();
    const char *id;
    json_t *def;
    json_object_foreach(spec_nodes, id, def)
    {
        const char *type = json_string_value(json_object_get(def, "type"));
        if (node ? !strcmp(id, node) : (type && !strncmp(type, "receiver:", 9))) {
            json_array_append_new(nodes, json_string(id));
        }
    }
    if (json_array_size(nodes) == 0) {
        json_decref(nodes);
        char known[600] = "";
        json_object_foreach(spec_nodes, id, def)
        {
            size_t used = strlen(known);
            snprintf(known + used, sizeof known - used, "%s%s", used ? ", " : "", id);
        }
        snprintf(why, whylen, "query.node: %s%s%s is not a node of %s (nodes: %s)", node ? "\"" : "",
                 node ? node : "no receiver", node ? "\"" : "", p->key, known);
        json_decref(spec_nodes);
        return NULL;
    }
    json_decref(spec_nodes);
    return nodes;
}

int drv_taps_open(drv_engine_t *engine, drv_pipeline_t *p, const drv_tap_open_t *how, char *why, size_t whylen)
{
    json_t *nodes = s_nodes(p, how->node, how->generation, why, whylen);
    if (!nodes) {
        return -1;
    }
    tap_t *tap = calloc(1, sizeof *tap);
    snprintf(tap->group, sizeof tap->group, "%s", p->group);
    snprintf(tap->pipeline, sizeof tap->pipeline, "%s", p->name);
    tap->nodes = nodes;
    tap->generation = how->generation;
    tap->limit = how->limit > 0 ? how->limit : DRV_TAP_LIMIT;
    int64_t now = drv_time_mono_ms();
    tap->deadline_ms = how->timeout_secs > 0 ? now + (int64_t)how->timeout_secs * 1000 : 0;
    tap->stream = how->stream ? drv_stream_ref(how->stream) : NULL;
    tap->sse = how->sse;
    tap->on_end = how->on_end;
    tap->arg = how->arg;
    tap->collected = json_array();
    tap->tokens = BURST;
    tap->refill_ms = now;
    tap->next_keepalive_ms = now + KEEPALIVE_MS;
    zlistx_add_end(engine->taps->taps, tap);
    if (tap->stream && tap->sse) {
        drv_stream_push(tap->stream, ": tapping\n\n", 11);
    }
    s_retell(engine, p);
    return 0;
}

int64_t drv_taps_tick(drv_engine_t *engine)
{
    if (!engine->taps || zlistx_size(engine->taps->taps) == 0) {
        return -1;
    }
    int64_t now = drv_time_mono_ms(), next = -1;
    bool ended = false;
    for (tap_t *t = zlistx_first(engine->taps->taps); t; t = zlistx_next(engine->taps->taps)) {
        if (!drv_registry_pipeline(engine, t->group, t->pipeline) || (t->deadline_ms && now >= t->deadline_ms) ||
            (t->stream && drv_stream_gone(t->stream))) {
            s_finish(t);
        } else if (t->stream && t->sse && now >= t->next_keepalive_ms) {
            t->next_keepalive_ms = now + KEEPALIVE_MS;
            t->done = drv_stream_push(t->stream, ": keep-alive\n\n", 14) == -2;
        }
        ended |= t->done;
        if (!t->done) {
            int64_t at = t->deadline_ms ? t->deadline_ms : now + 1000; // a second: did its client leave?
            next = next < 0 || at - now < next ? at - now : next;
        }
    }
    if (ended) {
        s_purge(engine);
    }
    return next;
}

void drv_taps_stop(drv_engine_t *engine)
{
    if (engine->taps) {
        zlistx_destroy(&engine->taps->taps); // each ends: streams close, zmq waiters are answered
        free(engine->taps);
        engine->taps = NULL;
        engine->tap_listener = NULL;
    }
}
