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
    drv_buffer_input_t input = {.node = node->id, .records = (uint32_t)n};
    if (raw) {
        input.form = DRV_BUFFER_RAW;
        for (int i = 0; i < raw_count && i < 4; i++) {
            input.parts[input.count++] = raw[i];
        }
    } else {
        if (!packed) {
            drv_dag_pack_records(&self->packing, records, n);
            packed = self->packing.data;
            size = self->packing.size;
        }
        input.form = DRV_BUFFER_RECORDS;
        input.parts[input.count++] = (struct iovec){(void *)packed, size};
    }
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
        drv_dag_positions_passed(self, (int64_t)n, drv_time_wall_ms());
        drv_node_forward(node, records, n);
    }
    return true;
}

//  The receiver an input read back entered at: the node of that id, else
//  (the spec changed) the first receiver that can read it (any, for
//  records; one with a replay hook, for a raw input), so that nothing is
//  dropped.
static drv_node_t *s_entry_node(drv_dag_t *self, const char *id, bool raw)
{
    drv_node_t *first = NULL;
    for (size_t i = 0; i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        if (node->kind->schema->role != DRV_ROLE_RECEIVER) {
            continue;
        }
        if (!strcmp(node->id, id)) {
            return node;
        }
        first = first || (raw && !node->kind->replay) ? first : node;
    }
    return first;
}

//  Runs an input read back through the receiver it entered at: its
//  records, or -1 when nothing can be made of it here (the receiver that
//  took it is of another kind now).
static int s_feed(drv_dag_t *self, const drv_buffer_input_t *input, drv_node_t **entry)
{
    drv_node_t *node = *entry = s_entry_node(self, input->node, input->form == DRV_BUFFER_RAW);
    msgpack_zone_clear(&self->batch_zone);
    int n = -1;
    self->feeding = input;
    if (node && input->form == DRV_BUFFER_RAW && node->kind->replay) {
        n = node->kind->replay(node, input->data, input->size);
    } else if (node && input->form == DRV_BUFFER_RECORDS) {
        msgpack_object root;
        const msgpack_object *records;
        char err[300];
        n = drv_batch_decode_checked(input->data, input->size, &self->batch_zone, &root, &records, err, sizeof err);
        if (n >= 0) {
            drv_node_forward(node, records, (size_t)n);
        }
    }
    self->feeding = NULL;
    return n;
}

//  An exporter that fell behind reads the log again from its position,
//  fed alone (drv_dag_positions.c), while it can take more; once it
//  reaches what the others were fed it is fed with them again.
static int s_catch_up(drv_dag_t *self, int index)
{
    drv_node_t *exporter = &self->nodes[index];
    int64_t fed_to_others = self->running;
    int fed = 0;
    if (!exporter->catch_up && !(exporter->catch_up = drv_buffer_reader_open(self->buffer, exporter->lag_next))) {
        return 0;
    }
    while (fed < PUMP_PER_ROUND && drv_dag_lagging_may_read(exporter)) {
        drv_buffer_input_t input;
        char err[300];
        int rc = exporter->lag_next > fed_to_others
                     ? 0
                     : drv_buffer_reader_next(exporter->catch_up, &input, err, sizeof err);
        if (rc < 0) {
            drv_error("disk buffer unreadable dir=%s reason=\"%s\"", drv_buffer_dir(self->buffer), err);
            break;
        }
        if (rc == 0 || input.number > fed_to_others) {
            drv_buffer_reader_close(&exporter->catch_up);
            exporter->lag_next = exporter->lag_records = 0;
            drv_dag_positions_say(exporter, "exporter caught up: fed with the others again");
            break;
        }
        self->rerun_for = index;
        self->running = input.number;
        drv_node_t *entry;
        s_feed(self, &input, &entry);
        self->running = fed_to_others;
        self->rerun_for = -1;
        exporter->lag_next = input.number + 1;
        drv_dag_positions_read(exporter, input.records, input.time_ms);
        fed++;
    }
    return fed;
}

int drv_dag_pump(drv_dag_t *self)
{
    int fed = drv_dag_handover_feed(self);
    for (size_t i = 0; self->buffer && i < self->count; i++) {
        if (drv_dag_lagging_may_read(&self->nodes[i])) {
            fed += s_catch_up(self, (int)i);
        }
    }
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
        int n = s_feed(self, &input, &node);
        if (n < 0) {
            self->unowned_errors++; // counted, and it settles as it is
            continue;
        }
        if (input.replayed) {
            node->in += n; // taken by an earlier instance: counted in as it is replayed
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
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}", "bytes", (json_int_t)stats.bytes, "records",
                     (json_int_t)stats.records, "oldest_age_ms", (json_int_t)(age > 0 ? age : 0), "replayed",
                     (json_int_t)stats.replayed, "dropped", (json_int_t)stats.dropped, "corrupt_segments",
                     (json_int_t)stats.corrupt_segments, "torn_bytes", (json_int_t)stats.torn_bytes, "unkept_bytes",
                     (json_int_t)stats.unkept_bytes, "odd_files", (json_int_t)stats.odd_files, "full",
                     drv_buffer_full(self->buffer));
}
