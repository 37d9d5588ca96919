/*  drv_dag_buffered — the DAG's side of a disk buffer (drv_buffer.h,
    docs/operations.md, disk buffers): what receivers take goes into the log first, numbered
    by it; it runs through the nodes at once when nothing waits before it
    and the exporters can take it, else it waits in the log and
    drv_dag_pump feeds it later, oldest first. A generated batch is not
    logged (a generator makes its records itself; nobody waits for an
    answer) and runs as part of the last input fed. */
#include "drv_dag_internal.h"

#include "drover/drv_batch.h"
#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <stdio.h>
#include <string.h>

#define PUMP_PER_ROUND 64

int drv_dag_buffer_open(drv_dag_t *self, const json_t *spec, char *err, size_t errlen)
{
    drv_buffer_policy_t policy;
    if (!drv_buffer_policy(spec, self->who.shares, &policy)) {
        return 0;
    }
    if (!self->who.buffer_dir) {
        snprintf(err, errlen, "policies.buffer: type disk needs engine.buffer_dir");
        return -1;
    }
    char why[400];
    self->buffer = drv_buffer_open(self->who.buffer_dir, self->who.group, self->who.pipeline, self->who.core, &policy,
                                   why, sizeof why);
    if (!self->buffer) {
        snprintf(err, errlen, "policies.buffer: %s", why);
        return -1;
    }
    //  Numbering goes on from the log's: what it holds is fed first.
    self->input = drv_buffer_last(self->buffer);
    self->running = self->settled = self->told_durable = 0;
    return 0;
}

bool drv_dag_buffer_take(drv_node_t *node, const msgpack_object *records, size_t n, const void *packed, size_t size,
                         const struct iovec *raw, int raw_count)
{
    drv_dag_t *self = node->dag;
    drv_buffer_input_t input;
    drv_dag_log_input(self, node, &input, records, n, packed, size, raw, raw_count);
    bool now = !drv_buffer_unread(self->buffer) && !drv_dag_detach_laggards(self);
    char err[300];
    int64_t number = drv_buffer_append(self->buffer, &input, now, err, sizeof err);
    if (number <= 0) {
        int64_t at = drv_time_mono_ms();
        if (at - node->last_warn_ms >= 5000) {
            node->last_warn_ms = at;
            drv_warn("input refused node=%s records=%zu reason=\"%s\"", node->id, n, err);
        }
        return false;
    }
    self->input = number;
    node->in += (int64_t)n;
    if (now) {
        self->running = number;
        drv_dag_positions_passed(self, (int64_t)n, self->taken_ms);
        drv_node_forward(node, records, n);
    }
    return true;
}

int drv_dag_pump(drv_dag_t *self)
{
    int fed = drv_dag_handover_feed(self) + drv_dag_catch_up(self);
    while (self->buffer && fed < PUMP_PER_ROUND && drv_buffer_unread(self->buffer) && !drv_dag_detach_laggards(self)) {
        drv_buffer_input_t input;
        char err[300];
        int rc = drv_buffer_next(self->buffer, &input, err, sizeof err);
        if (rc < 0) {
            drv_error("disk buffer unreadable dir=%s reason=\"%s\"", drv_buffer_dir(self->buffer), err);
            break;
        }
        if (rc == 0) {
            break;
        }
        self->running = input.number;
        fed++;
        drv_dag_positions_passed(self, input.records, input.time_ms);
        drv_node_t *node;
        int n = drv_dag_feed(self, &input, &node);
        if (n < 0) {
            self->unowned_errors++; // counted, and it settles as it is
            continue;
        }
        if (input.replayed && !input.had && input.number > self->taken_counted_upto) {
            node->in += n; // taken before a crash, after the counts saved then (drv_dag_counts.c)
        }
    }
    return fed;
}

int drv_dag_buffer_fd(const drv_dag_t *self)
{
    return self->buffer ? drv_buffer_fd(self->buffer) : -1;
}

bool drv_dag_buffer_empty(const drv_dag_t *self)
{
    if (!self->buffer || drv_buffer_empty(self->buffer)) {
        return true;
    }
    //  What is left is held for exporters behind alone: the log keeps it.
    bool behind = false;
    for (size_t i = 0; i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        if (node->lag_next) {
            behind = true;
        } else if (node->kind->holding && node->kind->holding(node) >= 0) {
            return false;
        }
    }
    return behind && !drv_buffer_unread(self->buffer);
}

json_t *drv_dag_buffer_stats(drv_dag_t *self)
{
    if (!self->buffer) {
        return NULL;
    }
    drv_buffer_stats_t stats;
    drv_buffer_stats(self->buffer, &stats);
    int64_t age = stats.oldest_ms > 0 ? drv_time_wall_ms() - stats.oldest_ms : 0;
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:b}", "bytes", (json_int_t)stats.bytes,
                     "records", (json_int_t)stats.records, "oldest_age_ms", (json_int_t)(age > 0 ? age : 0), "replayed",
                     (json_int_t)stats.replayed, "dropped", (json_int_t)stats.dropped, "corrupt_segments",
                     (json_int_t)stats.corrupt_segments, "torn_bytes", (json_int_t)stats.torn_bytes, "unkept_bytes",
                     (json_int_t)stats.unkept_bytes, "odd_files", (json_int_t)stats.odd_files, "full",
                     drv_buffer_full(self->buffer), "counts_restored", self->counts_restored);
}
