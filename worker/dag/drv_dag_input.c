/*  drv_dag_input — records entering the DAG (drv_node.h's emit calls, a
    broker batch): decoded into the batch zone, then into the disk buffer
    when there is one (drv_dag_buffered.c), else straight to the nodes; and
    whether the DAG takes any now (backlogged). Above drv_node.c and
    drv_dag_buffered.c, below drv_dag.c. */
#include "drv_dag_internal.h"

#include "drv_record.h"

#include "drover/drv_batch.h"
#include "drover/drv_time.h"

#include <stdio.h>

//  An input taken now: its time, and its records with it as their observed
//  time where they say none (what a receiver stamped itself is kept; the
//  log keeps the time, so an input read back gets the same, drv_dag_feed.c).
//  NULL when out of memory.
static const msgpack_object *s_taken(drv_dag_t *self, const msgpack_object *records, size_t n)
{
    self->taken_ms = drv_time_wall_ms();
    return drv_record_observed(&self->batch_zone, records, n, (uint64_t)self->taken_ms * 1000000u);
}

//  Without a disk buffer: records node took run through the nodes at once
//  as the next input, kept in the memory log first while an exporter is
//  behind (false, nothing run: it cannot be kept).
static bool s_run_now(drv_node_t *node, const msgpack_object *records, size_t n, const void *packed, size_t size,
                      const struct iovec *raw, int raw_count)
{
    drv_dag_t *self = node->dag;
    if (!drv_dag_memory_keep(self, node, self->input + 1, records, n, packed, size, raw, raw_count)) {
        return false;
    }
    self->running = ++self->input;
    node->in += (int64_t)n;
    drv_dag_positions_passed(self, (int64_t)n, self->taken_ms);
    drv_node_forward(node, records, n);
    return true;
}

//  Records packed as a message (a map or an array of maps) into the batch
//  zone, counted in and handed on from node; -1 (an error) when they are not.
static int s_decode_forward(drv_node_t *node, const void *data, size_t size, char *err, size_t errlen)
{
    drv_dag_t *self = node->dag;
    msgpack_object root;
    const msgpack_object *records;
    int n = drv_batch_decode(data, size, &self->batch_zone, &root, &records, err, errlen);
    if (n < 0) {
        node->errors++;
        return -1;
    }
    if (!(records = s_taken(self, records, (size_t)n))) {
        snprintf(err, errlen, "out of memory");
        return DRV_NODE_FULL;
    }
    if (self->buffer) {
        if (!drv_dag_buffer_take(node, records, (size_t)n, data, size, NULL, 0)) {
            snprintf(err, errlen, "the disk buffer is full");
            return DRV_NODE_FULL;
        }
        return n;
    }
    if (!s_run_now(node, records, (size_t)n, data, size, NULL, 0)) {
        snprintf(err, errlen, "out of memory keeping the input for an exporter behind");
        return DRV_NODE_FULL;
    }
    return n;
}

int drv_node_emit_packed(drv_node_t *node, const void *data, size_t size, char *err, size_t errlen)
{
    msgpack_zone_clear(&node->dag->batch_zone);
    return s_decode_forward(node, data, size, err, errlen);
}

msgpack_zone *drv_node_batch_zone(drv_node_t *node)
{
    msgpack_zone_clear(&node->dag->batch_zone);
    return &node->dag->batch_zone;
}

bool drv_node_emit_objects(drv_node_t *node, const msgpack_object *records, size_t n)
{
    drv_dag_t *self = node->dag;
    if (!(records = s_taken(self, records, n))) {
        return false;
    }
    if (self->buffer) {
        return drv_dag_buffer_take(node, records, n, NULL, 0, NULL, 0);
    }
    return s_run_now(node, records, n, NULL, 0, NULL, 0);
}

bool drv_node_emit_input(drv_node_t *node, const struct iovec *raw, int raw_count, const msgpack_object *records,
                         size_t n)
{
    if (!(records = s_taken(node->dag, records, n))) {
        return false;
    }
    if (node->dag->buffer) {
        return drv_dag_buffer_take(node, records, n, NULL, 0, raw, raw_count);
    }
    return s_run_now(node, records, n, NULL, 0, raw, raw_count);
}

void drv_node_emit_generated(drv_node_t *node, const msgpack_object *records, size_t n, const struct iovec *raw,
                             int raw_count)
{
    drv_dag_t *self = node->dag;
    if (!(records = s_taken(self, records, n))) {
        drv_node_record_error(node, "out of memory stamping generated records");
        return;
    }
    drv_node_count_in(node, n);
    if (!self->buffer) { // kept for exporters behind like any input (drv_dag_generate numbered it)
        if (!drv_dag_memory_keep(self, node, self->running, records, n, NULL, 0, raw, raw_count)) {
            drv_node_record_error(node, "out of memory keeping generated records for an exporter behind");
            return;
        }
        drv_dag_positions_passed(self, (int64_t)n, self->taken_ms);
    }
    drv_node_forward(node, records, n);
}

bool drv_node_backlogged(const drv_node_t *node)
{
    return drv_dag_backlogged(node->dag);
}

bool drv_dag_backlogged(drv_dag_t *self)
{
    bool full = self->buffer ? drv_buffer_full(self->buffer) : drv_dag_detach_laggards(self);
    for (size_t i = 0; i < self->count && !full; i++) {
        full = self->nodes[i].log_full; // behind, at its queue's bound, when_full: block
    }
    return full;
}
