/*  drv_taps — live taps (docs/operations.md, seeing it live): a sample of the records leaving a
    node, as they flow. A tap belongs to the pipeline, not to an instance:
    every instance of every generation that has the node samples it, so a
    tap opened before a replace shows the new generation's records after it,
    and a node only a canary's generation has can be tapped while it holds
    (or the tap confined to one generation).
    Instances sample only while a tap is open (pipeline->tap_nodes, sent to
    them in `tap` messages); each tap lets about DRV_TAP_RATE records a
    second through, and ends after `limit` records, at its timeout, or when
    its client leaves. */
#ifndef DRV_TAPS_H
#define DRV_TAPS_H

#include "drv_engine.h"
#include "drv_stream.h"

#define DRV_TAP_RATE DRV_TAP_SAMPLES_PER_SEC // records per second, per tap (what each instance samples)
#define DRV_TAP_LIMIT 100                    // records, when the client names no limit

typedef struct {
    const char *node; // NULL: the pipeline's receivers
    int limit;
    int timeout_secs;     // 0: none
    int64_t generation;   // only this generation's instances (a canary's); 0: every generation
    drv_stream_t *stream; // HTTP: records go here (a reference is taken) ...
    bool sse;             // ... as SSE `event: record` (else NDJSON lines)
    //  Or: the records are collected and given to on_end(arg, records) when
    //  the tap ends (zmq; records is borrowed).
    void (*on_end)(void *arg, json_t *records);
    void *arg;
} drv_tap_open_t;

void drv_taps_init(drv_engine_t *engine);
//  Opens a tap on p. Returns 0, or -1 with what is wrong (an unknown node) in why.
int drv_taps_open(drv_engine_t *engine, drv_pipeline_t *p, const drv_tap_open_t *how, char *why, size_t whylen);
//  Ends taps that are due, gone or whose pipeline is; returns ms until the next check (-1: none).
int64_t drv_taps_tick(drv_engine_t *engine);
void drv_taps_stop(drv_engine_t *engine);

#endif
