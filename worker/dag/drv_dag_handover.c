/*  drv_dag_handover — a memory-buffered instance that drains while an
    exporter cannot deliver hands what that exporter holds to the next
    instance of the pipeline instead of waiting for the drain timeout
    (docs/operations.md, "Exporter queues"; the log: buffer/drv_handover.h).
    Handing over: once the exporters that still hold anything are all
    failing, their batches are written, then the inputs the memory log
    keeps for those behind (each with the exporters that had it), synced,
    and let go, so that the instance settles and exits. Taking over: every
    running instance of the pipeline looks for a handover nobody holds
    every SCAN_MS and gives the batches to its own exporter of the same id
    (they already went through the processors) and runs the inputs through
    its receiver for the exporters that had not had them, oldest first, as
    its exporters can take them; the handover is deleted once they are
    settled. Above drv_dag_feed.c, below
    drv_dag_buffered.c. */
#include "drv_dag_internal.h"
#include "drv_handover.h"
#include "drv_memory_log.h"

#include "drover/drv_batch.h"
#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_MS 1000
#define TRY_EVERY_MS 500
#define FEED_PER_TURN 64

static bool s_exporter(const drv_node_t *node)
{
    return node->kind->schema->role == DRV_ROLE_EXPORTER;
}

//  ---------------------------------------------------------------- handing over

typedef struct {
    drv_handover_t *log;
    const char *exporter;
    msgpack_sbuffer packed;
    char err[300];
} put_t;

static bool s_put(void *arg, const msgpack_object *records, size_t n)
{
    put_t *put = arg;
    drv_dag_pack_records(&put->packed, records, n);
    drv_buffer_input_t input = {.node = put->exporter,
                                .form = DRV_BUFFER_RECORDS,
                                .data = put->packed.data,
                                .size = put->packed.size,
                                .records = (uint32_t)n};
    return drv_handover_put(put->log, &input, NULL, 0, put->err, sizeof put->err) == 0;
}

//  The inputs the memory log keeps for the exporters behind, from the
//  furthest behind on, each with the exporters that had it already.
static bool s_put_kept(drv_dag_t *self, put_t *put)
{
    int64_t from = INT64_MAX;
    for (size_t i = 0; i < self->count; i++) {
        from = self->nodes[i].lag_next > 0 && self->nodes[i].lag_next < from ? self->nodes[i].lag_next : from;
    }
    drv_buffer_input_t input;
    while (self->memory && from < INT64_MAX && drv_memory_log_read(self->memory, from, &input) == 1) {
        const char *had[255];
        size_t count = 0;
        for (size_t i = 0; i < self->count && count < 255; i++) {
            drv_node_t *node = &self->nodes[i];
            if (s_exporter(node) && !(node->lag_next > 0 && node->lag_next <= input.number)) {
                had[count++] = node->id;
            }
        }
        if (drv_handover_put(put->log, &input, had, count, put->err, sizeof put->err) != 0) {
            return false;
        }
        from = input.number + 1;
    }
    return true;
}

//  True when what is held is held only by exporters that are failing and
//  can hand it over (with what the memory log keeps for them when behind).
static bool s_only_failing_hold(drv_dag_t *self)
{
    bool any = false;
    for (size_t i = 0; i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        bool holds = (node->kind->holding && node->kind->holding(node) >= 0) || node->lag_next > 0;
        if (holds && (!s_exporter(node) || !node->failing_since_ms || !node->kind->hand_over)) {
            return false;
        }
        any |= holds;
    }
    return any;
}

void drv_dag_hand_over(drv_dag_t *self)
{
    int64_t now = drv_time_mono_ms();
    if (self->buffer || !self->who.buffer_dir || now < self->handover_tried_ms + TRY_EVERY_MS ||
        !s_only_failing_hold(self)) {
        return;
    }
    self->handover_tried_ms = now;
    put_t put = {.err = "out of memory"};
    put.log = drv_handover_create(self->who.buffer_dir, self->who.group, self->who.pipeline, self->who.core,
                                  self->who.generation, put.err, sizeof put.err);
    msgpack_sbuffer_init(&put.packed);
    int64_t records = 0;
    for (size_t i = 0; put.log && i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        if (node->kind->hand_over && node->kind->holding(node) >= 0) {
            put.exporter = node->id;
            int64_t n = node->kind->hand_over(node, s_put, &put, false);
            records = n < 0 || records < 0 ? -1 : records + n;
        }
    }
    records = put.log && records >= 0 && s_put_kept(self, &put) ? records : -1;
    msgpack_sbuffer_destroy(&put.packed);
    if (!put.log || records < 0 || drv_handover_close(&put.log, true, put.err, sizeof put.err) != 0) {
        if (put.log) {
            drv_handover_close(&put.log, false, put.err, sizeof put.err);
        }
        drv_warn("drain: what exporters behind hold not handed over reason=\"%s\": waiting for them", put.err);
        return;
    }
    for (size_t i = 0; i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        if (node->kind->hand_over && (node->kind->holding(node) >= 0 || node->lag_next > 0)) {
            node->kind->hand_over(node, s_put, NULL, true);
            node->lag_next = node->lag_records = 0; // what the log kept for it went too
            drv_info("drain: exporter behind handed its queue to the next instance node=%s", node->id);
        }
    }
    int64_t kept_bytes = 0, kept_records = 0;
    if (self->memory) {
        drv_memory_log_size(self->memory, &kept_bytes, &kept_records);
        drv_memory_log_forget(self->memory, INT64_MAX);
    }
    drv_info("drain: handed over records=%lld inputs_kept_records=%lld", (long long)records, (long long)kept_records);
}

//  ---------------------------------------------------------------- taking over

static drv_node_t *s_exporter_named(drv_dag_t *self, const char *id)
{
    for (size_t i = 0; i < self->count; i++) {
        if (s_exporter(&self->nodes[i]) && !strcmp(self->nodes[i].id, id)) {
            return &self->nodes[i];
        }
    }
    return NULL;
}

//  True while an exporter holds as much as it may, or is behind (reading
//  the log again: what is handed over would pass it by).
static bool s_any_backlogged(drv_dag_t *self)
{
    for (size_t i = 0; i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        if (node->lag_next > 0 || (node->kind->hand_over && node->kind->backlogged && node->kind->backlogged(node))) {
            return true;
        }
    }
    return false;
}

static void s_pending_push(drv_dag_t *self, int64_t input, int64_t entry)
{
    int64_t pair[2] = {input, entry};
    if (!drv_ring_push(&self->handover_pending, pair)) {
        abort(); // two numbers per handed-over batch, bounded by the exporter's queue
    }
}

int drv_dag_handover_feed(drv_dag_t *self)
{
    int64_t now = drv_time_mono_ms();
    if (self->buffer || !self->who.buffer_dir || self->draining) {
        return 0;
    }
    if (!self->handover && now >= self->handover_scan_ms) {
        self->handover_scan_ms = now + SCAN_MS;
        if ((self->handover = drv_handover_claim(self->who.buffer_dir, self->who.group, self->who.pipeline))) {
            self->handover_read_all = false;
            drv_info("taking over what a drained instance's exporters held dir=%s", drv_handover_dir(self->handover));
        }
    }
    int fed = 0;
    while (self->handover && !self->handover_read_all && fed < FEED_PER_TURN && !s_any_backlogged(self)) {
        drv_buffer_input_t input;
        char err[300];
        int rc = drv_handover_next(self->handover, &input, err, sizeof err);
        if (rc <= 0) {
            if (rc < 0) {
                drv_warn("handover unreadable dir=%s reason=\"%s\": the rest is left to the next instance",
                         drv_handover_dir(self->handover), err);
            }
            self->handover_read_all = true;
            break;
        }
        self->running = ++self->input;
        if (input.had) { // an input kept for exporters behind: run for those that had not had it
            drv_node_t *entry;
            if (drv_dag_feed(self, &input, &entry) < 0) { // counted where it was taken (drv_dag_counts.c)
                self->unowned_errors++;                   // counted, and it settles as it is
            }
            s_pending_push(self, self->input, input.number);
            fed++;
            continue;
        }
        msgpack_zone_clear(&self->batch_zone);
        msgpack_object root;
        const msgpack_object *records;
        int n = drv_batch_decode_checked(input.data, input.size, &self->batch_zone, &root, &records, err, sizeof err);
        drv_node_t *exporter = s_exporter_named(self, input.node);
        if (n >= 0 && exporter) {
            self->elsewhere = true; // counted in where it was taken: delivered here (drv_dag_counts.c)
            drv_node_deliver(exporter, records, (size_t)n);
            self->elsewhere = false;
        } else {
            self->unowned_errors++; // the pipeline has no such exporter any more: counted, and it settles as it is
            drv_warn("handed-over records for no exporter of this pipeline node=%s records=%u", input.node,
                     input.records);
        }
        s_pending_push(self, self->input, input.number);
        fed++;
    }
    return fed;
}

void drv_dag_handover_settled(drv_dag_t *self, int64_t settled)
{
    int64_t entry = -1, *pair;
    while ((pair = drv_ring_front(&self->handover_pending)) && pair[0] <= settled) {
        entry = pair[1];
        drv_ring_pop(&self->handover_pending);
    }
    if (self->handover && entry >= 0) {
        drv_handover_settled(self->handover, entry);
    }
    if (self->handover && self->handover_read_all && self->handover_pending.count == 0) {
        drv_info("handed-over records delivered dir=%s", drv_handover_dir(self->handover));
        drv_handover_finish(&self->handover);
    }
}

int64_t drv_dag_handover_timeout_ms(const drv_dag_t *self, int64_t now)
{
    if (self->buffer || !self->who.buffer_dir || self->draining) {
        return -1;
    }
    if (self->handover && !self->handover_read_all) {
        return 0;
    }
    return self->handover ? -1 : (self->handover_scan_ms > now ? self->handover_scan_ms - now : 0);
}

void drv_dag_handover_close(drv_dag_t *self)
{
    drv_handover_release(&self->handover);
    drv_ring_fini(&self->handover_pending);
}
