/*  drv_sse — the event stream as Server-Sent Events (docs/operations.md, seeing it live): every
    event published goes, in order, to each client whose topic prefixes
    match, as `id`, `event: <topic>`, `data: <JSON>`. A client whose queue is
    full (engine.limits.stream_queue_bytes) loses events (counted in drover_sse_events_dropped_total, and told
    by an `event: dropped` naming how many) instead of slowing the engine.
    Clients that ask for topic `status` also get the whole /status document
    once a second, and at once after an event that changes it (at most every
    50 ms): the web console's live view. A comment line every 15 s
    keeps proxies from closing the stream and finds clients that left.

    The last DRV_SSE_KEPT events are kept: a new client gets those its
    topics match at once (the console shows what happened before it was
    opened), and one that reconnects with Last-Event-ID only those after
    that id (EventSource does it by itself), so nothing is missed nor shown
    twice across a reconnection, as far back as the kept events go. */
#ifndef DRV_SSE_H
#define DRV_SSE_H

#include "drv_engine.h"
#include "drv_stream.h"

void drv_sse_init(drv_engine_t *engine);
//  The id the next event gets; across an upgrade in place the new droverd
//  goes on from it, so a client's Last-Event-ID keeps its meaning.
int64_t drv_sse_next_id(drv_engine_t *engine);
void drv_sse_continue_at(drv_engine_t *engine, int64_t id);
//  A new client: topics is a comma-separated list of prefixes ("" or NULL:
//  every topic but the `status` snapshots); last_event_id: what it saw last
//  (-1: new; it gets every kept event). Takes a reference to stream.
#define DRV_SSE_KEPT 256
//  The kept events whose topic starts with one of topics (comma-separated;
//  NULL: all), oldest first: [{id, topic, event}]. New reference. (What a
//  zmq client asks GET /api/v1/events for: the events socket has no history.)
json_t *drv_sse_kept(drv_engine_t *engine, const char *topics);
void drv_sse_add(drv_engine_t *engine, drv_stream_t *stream, const char *topics, int64_t last_event_id);
//  Snapshots and keep-alives that are due; returns ms until the next (-1: none).
int64_t drv_sse_tick(drv_engine_t *engine);
size_t drv_sse_clients(drv_engine_t *engine);
//  Ends every stream (droverd is stopping) and frees the clients.
void drv_sse_stop(drv_engine_t *engine);

#endif
