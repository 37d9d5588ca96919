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
            msgpack_sbuffer_clear(&self->packing);
            msgpack_packer pk;
            msgpack_packer_init(&pk, &self->packing, msgpack_sbuffer_write);
            msgpack_pack_array(&pk, n);
            for (size_t i = 0; i < n; i++) {
                msgpack_pack_object(&pk, records[i]);
            }
            packed = self->packing.data;
            size = self->packing.size;
        }
        input.form = DRV_BUFFER_RECORDS;
        input.parts[input.count++] = (struct iovec){(void *)packed, size};
    }
    bool now = !drv_buffer_unread(self->buffer) && !drv_dag_exporters_backlogged(self);
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

int drv_dag_pump(drv_dag_t *self)
{
    int fed = 0;
    while (self->buffer && fed < PUMP_PER_ROUND && drv_buffer_unread(self->buffer) &&
           !drv_dag_exporters_backlogged(self)) {
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
        drv_node_t *node = s_entry_node(self, input.node, input.form == DRV_BUFFER_RAW);
        msgpack_zone_clear(&self->batch_zone);
        int n = -1;
        if (node && input.form == DRV_BUFFER_RAW && node->kind->replay) {
            n = node->kind->replay(node, input.data, input.size);
        } else if (node && input.form == DRV_BUFFER_RECORDS) {
            msgpack_object root;
            const msgpack_object *records;
            n = drv_batch_decode_checked(input.data, input.size, &self->batch_zone, &root, &records, err, sizeof err);
            if (n >= 0) {
                drv_node_forward(node, records, (size_t)n);
            }
        }
        if (n < 0) {
            //  Nothing can be made of it here (the receiver that took it is of
            //  another kind now): counted, and it settles as it is.
            self->unowned_errors++;
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
    return !self->buffer || drv_buffer_empty(self->buffer);
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
