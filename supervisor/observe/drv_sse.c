/*  drv_sse — events to Server-Sent Events clients (drv_sse.h). Runs on the
    loop thread; the only thing shared with the HTTP thread is each
    client's drv_stream_t. */
#include "drv_sse.h"
#include "drv_status.h"

#include "drover/drv_time.h"

#include <malloc.h>
#include <stdio.h>
#include <string.h>

#define STATUS_EVERY_MS 1000
//  After an event that changes what the status shows (a rollout's end, an
//  instance's exit), the next snapshot goes at once, at most this often:
//  the console follows a rollout without a second's lag (docs/operations.md).
#define STATUS_SOON_GAP_MS 50
#define KEEPALIVE_EVERY_MS 15000
#define MAX_TOPICS 16
//  What every client's queue together may hold: a thousand streams that
//  never read share this, instead of each holding stream_queue_bytes.
#define ALL_QUEUES_BYTES (64 * 1024 * 1024)

typedef struct {
    drv_stream_t *stream;
    char *topics[MAX_TOPICS]; // prefixes, owned
    size_t topic_count;
    bool wants_status;
    int64_t dropped; // events lost since the last one that arrived
    bool gone;       // the client left: forgotten at the next purge
} client_t;

typedef struct {
    int64_t id;
    char *topic;
    char *frame; // "id: …\nevent: …\ndata: …\n\n"
    size_t len;
} kept_t;

struct drv_sse_t {
    zlistx_t *clients;         // client_t, owned
    kept_t kept[DRV_SSE_KEPT]; // the last events (not status snapshots), a ring
    size_t kept_next;          // where the next goes (the oldest, once full)
    int64_t next_id;           // the `id:` of the next event
    int64_t next_status_ms;    // mono
    int64_t last_status_ms;    // mono: when the last snapshot went
    bool status_soon;          // an event changed the status: the next snapshot is due now
    int64_t next_keepalive_ms;
};

static void s_client_free(void **item)
{
    client_t *client = *item;
    if (client) {
        drv_stream_end(client->stream);
        drv_stream_unref(&client->stream);
        for (size_t i = 0; i < client->topic_count; i++) {
            free(client->topics[i]);
        }
        free(client);
        *item = NULL;
    }
}

static bool s_matches(const client_t *client, const char *topic)
{
    if (client->topic_count == 0) {
        return strcmp(topic, "status") != 0;
    }
    for (size_t i = 0; i < client->topic_count; i++) {
        if (!strncmp(topic, client->topics[i], strlen(client->topics[i]))) {
            return true;
        }
    }
    return false;
}

//  Queues one frame; a full queue loses it (counted). Returns false when
//  the client is gone and should be forgotten.
static bool s_send(drv_engine_t *engine, client_t *client, const char *frame, size_t len)
{
    if (client->dropped > 0) {
        char notice[120];
        int n =
            snprintf(notice, sizeof notice, "event: dropped\ndata: {\"count\":%lld}\n\n", (long long)client->dropped);
        if (drv_stream_push(client->stream, notice, (size_t)n) == 0) {
            client->dropped = 0;
        }
    }
    size_t share = ALL_QUEUES_BYTES / (zlistx_size(engine->sse->clients) + 1);
    int rc = client->dropped > 0 || drv_stream_queued(client->stream) + len > share
                 ? -1
                 : drv_stream_push(client->stream, frame, len);
    if (rc == -1) {
        client->dropped++;
        engine->sse_dropped++;
    }
    return rc != -2;
}

static void s_purge(zlistx_t *clients)
{
    size_t before = zlistx_size(clients);
    client_t *c = zlistx_first(clients);
    while (c) {
        if (c->gone) {
            zlistx_delete(clients, zlistx_cursor(clients));
            c = zlistx_first(clients);
        } else {
            c = zlistx_next(clients);
        }
    }
    size_t left = before - zlistx_size(clients);
    if (left >= 16 || (left > 0 && zlistx_size(clients) == 0)) {
        malloc_trim(0); // a flood of streams is over: give their queues' memory back to the system
    }
}

//  Sends frame to every client topic matches; forgets those that left.
static void s_broadcast(drv_engine_t *engine, const char *topic, const char *frame, size_t len)
{
    zlistx_t *clients = engine->sse->clients;
    bool purge = false;
    for (client_t *c = zlistx_first(clients); c; c = zlistx_next(clients)) {
        if (s_matches(c, topic) && !s_send(engine, c, frame, len)) {
            c->gone = purge = true;
        }
    }
    if (purge) {
        s_purge(clients);
    }
}

//  Sends an event to whom it concerns; keep: it is one of the events kept
//  for clients to come (status snapshots are not).
static void s_publish(drv_engine_t *engine, const char *topic, const char *data, bool keep)
{
    struct drv_sse_t *sse = engine->sse;
    size_t cap = strlen(topic) + strlen(data) + 64;
    char *frame = malloc(cap);
    if (!frame) {
        return;
    }
    int64_t id = sse->next_id++;
    int n = snprintf(frame, cap, "id: %lld\nevent: %s\ndata: %s\n\n", (long long)id, topic, data);
    s_broadcast(engine, topic, frame, (size_t)n);
    if (!keep) {
        free(frame);
        return;
    }
    kept_t *slot = &sse->kept[sse->kept_next];
    free(slot->topic);
    free(slot->frame);
    *slot = (kept_t){.id = id, .topic = strdup(topic), .frame = frame, .len = (size_t)n};
    sse->kept_next = (sse->kept_next + 1) % DRV_SSE_KEPT;
}

//  Events after which the status reads differently.
static bool s_changes_status(const char *topic)
{
    static const char *const prefixes[] = {"rollout.", "instance.", "pipeline.", "shutdown.",
                                           "group.",   "broker.",   "config."};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
        if (!strncmp(topic, prefixes[i], strlen(prefixes[i]))) {
            return true;
        }
    }
    return false;
}

static void s_on_event(drv_engine_t *engine, const char *topic, const json_t *event)
{
    engine->sse->status_soon |= s_changes_status(topic);
    char *data = json_dumps(event, JSON_COMPACT); // kept even with no client: the next one gets it
    if (data) {
        s_publish(engine, topic, data, true);
        free(data);
    }
}

//  True when topic starts with one of the comma-separated prefixes in
//  topics (NULL or "": every topic).
static bool s_topic_listed(const char *topics, const char *topic)
{
    if (!topics || !*topics) {
        return true;
    }
    for (const char *p = topics; *p;) {
        size_t len = strcspn(p, ",");
        if (len && !strncmp(topic, p, len)) {
            return true;
        }
        p += len + (p[len] == ',');
    }
    return false;
}

void drv_sse_init(drv_engine_t *engine)
{
    engine->sse = calloc(1, sizeof *engine->sse);
    engine->sse->clients = zlistx_new();
    zlistx_set_destructor(engine->sse->clients, s_client_free);
    engine->event_listener = s_on_event;
}

int64_t drv_sse_next_id(drv_engine_t *engine)
{
    return engine->sse ? engine->sse->next_id : 0;
}

void drv_sse_continue_at(drv_engine_t *engine, int64_t id)
{
    if (engine->sse && id > engine->sse->next_id) {
        engine->sse->next_id = id;
    }
}

void drv_sse_add(drv_engine_t *engine, drv_stream_t *stream, const char *topics, int64_t last_event_id)
{
    client_t *client = calloc(1, sizeof *client);
    client->stream = drv_stream_ref(stream);
    char *copy = strdup(topics ? topics : "");
    char *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t && client->topic_count < MAX_TOPICS; t = strtok_r(NULL, ",", &save)) {
        if (*t) {
            client->topics[client->topic_count++] = strdup(t);
        }
    }
    free(copy);
    client->wants_status = client->topic_count > 0 && s_matches(client, "status");
    zlistx_add_end(engine->sse->clients, client);
    //  The stream opens with a comment, so a client knows it is subscribed
    //  (and headers go out at once).
    drv_stream_push(stream, ": subscribed\n\n", 14);
    //  What it missed, oldest first: all that is kept, or what came after
    //  the last event it saw.
    struct drv_sse_t *sse = engine->sse;
    for (size_t i = 0; i < DRV_SSE_KEPT; i++) {
        const kept_t *k = &sse->kept[(sse->kept_next + i) % DRV_SSE_KEPT];
        if (k->frame && k->id > last_event_id && s_matches(client, k->topic)) {
            s_send(engine, client, k->frame, k->len);
        }
    }
    if (client->wants_status) {
        engine->sse->next_status_ms = 0; // the first snapshot at once
    }
}

int64_t drv_sse_tick(drv_engine_t *engine)
{
    struct drv_sse_t *sse = engine->sse;
    if (!sse || zlistx_size(sse->clients) == 0) {
        return -1;
    }
    int64_t now = drv_time_mono_ms();
    bool status_due =
        now >= sse->next_status_ms || (sse->status_soon && now >= sse->last_status_ms + STATUS_SOON_GAP_MS);
    bool anyone_wants_status = false;
    for (client_t *c = zlistx_first(sse->clients); c; c = zlistx_next(sse->clients)) {
        anyone_wants_status |= c->wants_status;
    }
    if (status_due && anyone_wants_status) {
        sse->next_status_ms = now + STATUS_EVERY_MS;
        sse->last_status_ms = now;
        sse->status_soon = false;
        char *status = drv_status_all_text(engine);
        s_publish(engine, "status", status, false);
        free(status);
    }
    if (now >= sse->next_keepalive_ms) {
        sse->next_keepalive_ms = now + KEEPALIVE_EVERY_MS;
        for (client_t *c = zlistx_first(sse->clients); c; c = zlistx_next(sse->clients)) {
            c->gone = drv_stream_push(c->stream, ": keep-alive\n\n", 14) == -2;
        }
        s_purge(sse->clients);
    }
    int64_t wait = sse->next_keepalive_ms - now;
    if (anyone_wants_status && sse->next_status_ms - now < wait) {
        wait = sse->next_status_ms - now;
    }
    if (anyone_wants_status && sse->status_soon && sse->last_status_ms + STATUS_SOON_GAP_MS - now < wait) {
        wait = sse->last_status_ms + STATUS_SOON_GAP_MS - now;
    }
    return wait < 0 ? 0 : wait;
}

size_t drv_sse_clients(drv_engine_t *engine)
{
    return engine->sse ? zlistx_size(engine->sse->clients) : 0;
}

void drv_sse_stop(drv_engine_t *engine)
{
    if (engine->sse) {
        zlistx_destroy(&engine->sse->clients); // each stream ends
        for (size_t i = 0; i < DRV_SSE_KEPT; i++) {
            free(engine->sse->kept[i].topic);
            free(engine->sse->kept[i].frame);
        }
        free(engine->sse);
        engine->sse = NULL;
        engine->event_listener = NULL;
    }
}

json_t *drv_sse_kept(drv_engine_t *engine, const char *topics)
{
    struct drv_sse_t *sse = engine->sse;
    json_t *events = json_array();
    for (size_t n = 0; n < DRV_SSE_KEPT; n++) {
        const kept_t *k = &sse->kept[(sse->kept_next + n) % DRV_SSE_KEPT]; // oldest first
        const char *data = k->frame ? strstr(k->frame, "\ndata: ") : NULL;
        if (!data || !s_topic_listed(topics, k->topic)) {
            continue;
        }
        data += strlen("\ndata: ");
        json_t *event = json_loadb(data, strlen(data), 0, NULL); // up to the frame's blank line
        if (event) {
            json_array_append_new(
                events, json_pack("{s:I, s:s, s:o}", "id", (json_int_t)k->id, "topic", k->topic, "event", event));
        }
    }
    return events;
}
