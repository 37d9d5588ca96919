/*  drv_dag — the node graph of one instance and the flow of a batch through
    it. The DAG knows nothing of what a node does: each kind (worker/nodes/,
    handed over in a drv_kinds_t) brings its own init, run and destroy; the
    DAG builds the nodes in spec
    order, wires their edges, and offers them what they share: the batch
    zone, the counters and the encoding buffer. */
#include "drv_dag.h"
#include "drv_dag_internal.h"
#include "drv_buf.h"
#include "drv_memory_log.h"
#include "drv_node.h"

#include "drover/drv_batch.h"
#include "drover/drv_log.h"
#include "drover/drv_mpjson.h"
#include "drover/drv_node_counters.h"
#include "drover/drv_problems.h"
#include "drover/drv_time.h"

#include <czmq.h>
#include <poll.h>
#include <msgpack.h>
#include <string.h>

//  ---------------------------------------------------------------- building

static void s_node_destroy(drv_node_t *node)
{
    if (node->kind && node->kind->destroy) {
        node->kind->destroy(node);
    } else {
        free(node->state);
    }
    node->state = NULL;
    free(node->to);
    node->to = NULL;
}

//  Builds the DAG; with problems (a probe), a node that cannot start is
//  noted there as {path, message} and the others are still tried.
static drv_dag_t *s_build(const json_t *spec, const drv_dag_identity_t *who, const drv_kinds_t *kinds,
                          drv_problems_t *problems, char *err, size_t errlen);

drv_dag_t *drv_dag_new(const json_t *spec, const drv_dag_identity_t *who, const drv_kinds_t *kinds, char *err,
                       size_t errlen)
{
    return s_build(spec, who, kinds, NULL, err, errlen);
}

void drv_dag_probe(const json_t *spec, const drv_dag_identity_t *who, const drv_kinds_t *kinds,
                   drv_problems_t *problems)
{
    char err[400];
    drv_dag_t *dag = s_build(spec, who, kinds, problems, err, sizeof err);
    drv_dag_destroy(&dag);
}

static const drv_node_kind_t *s_kind(const drv_kinds_t *kinds, const char *name)
{
    for (size_t i = 0; i < kinds->count; i++) {
        if (strcmp(kinds->list[i]->schema->name, name) == 0) {
            return kinds->list[i];
        }
    }
    return NULL;
}

static drv_dag_t *s_build(const json_t *spec, const drv_dag_identity_t *who, const drv_kinds_t *kinds,
                          drv_problems_t *problems, char *err, size_t errlen)
{
    json_t *nodes = json_object_get(spec, "nodes");
    drv_dag_t *self = calloc(1, sizeof *self);
    self->who.group = strdup(who->group ? who->group : "");
    self->who.pipeline = strdup(who->pipeline ? who->pipeline : "");
    self->who.generation = who->generation;
    self->who.core = who->core;
    self->who.shares = who->shares;
    self->who.buffer_dir = who->buffer_dir ? strdup(who->buffer_dir) : NULL;
    self->who.run_dir = who->run_dir ? strdup(who->run_dir) : NULL;
    self->spec_buffers = zlist_new();
    msgpack_zone_init(&self->spec_zone, 4096);
    msgpack_zone_init(&self->batch_zone, 64 * 1024);
    msgpack_sbuffer_init(&self->packing);
    drv_ring_init(&self->handover_pending, 2 * sizeof(int64_t));
    self->rerun_for = -1;
    if (!problems && drv_dag_buffer_open(self, spec, err, errlen) != 0) {
        drv_dag_destroy(&self);
        return NULL;
    }
    if (!self->buffer && !(self->memory = drv_memory_log_new())) {
        snprintf(err, errlen, "out of memory");
        drv_dag_destroy(&self);
        return NULL;
    }
    self->count = json_object_size(nodes);
    self->nodes = calloc(self->count ? self->count : 1, sizeof *self->nodes);
    const char *id;
    json_t *node;
    size_t index = 0;
    json_object_foreach(nodes, id, node)
    {
        drv_node_t *n = &self->nodes[index++];
        snprintf(n->id, sizeof n->id, "%s", id);
        n->dag = self;
    }
    index = 0;
    json_object_foreach(nodes, id, node)
    {
        drv_node_t *n = &self->nodes[index++];
        json_t *to = json_object_get(node, "to");
        n->to = calloc(json_array_size(to) + 1, sizeof *n->to);
        size_t k;
        json_t *target;
        json_array_foreach(to, k, target)
        {
            for (size_t j = 0; j < self->count; j++) {
                if (strcmp(self->nodes[j].id, json_string_value(target)) == 0) {
                    n->to[n->to_count++] = (int)j;
                }
            }
        }
        const char *type = json_string_value(json_object_get(node, "type"));
        n->kind = type ? s_kind(kinds, type) : NULL;
        n->ack = json_is_true(json_object_get(json_object_get(node, "config"), "ack"));
        if (!n->kind) {
            snprintf(err, errlen, "node %s: unknown type %s", n->id, type ? type : "(none)");
            drv_dag_destroy(&self);
            return NULL;
        }
        if (n->kind->init && n->kind->init(n, json_object_get(node, "config"), err, errlen) != 0) {
            if (problems) {
                char path[300];
                snprintf(path, sizeof path, "nodes.%s", n->id);
                drv_problems_add(problems, path, "%s", err);
                continue;
            }
            drv_dag_destroy(&self);
            return NULL;
        }
    }
    drv_dag_mark_first_copies(self, nodes);
    drv_dag_positions_open(self);
    return self;
}

void drv_dag_destroy(drv_dag_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_dag_t *self = *self_p;
    if (self->positions) { // built whole: where each exporter stands, saved for whoever reads the log next
        self->positions_due_ms = 0;
        drv_dag_positions_tick(self, drv_time_mono_ms());
    }
    for (size_t i = 0; i < self->count; i++) {
        drv_buffer_reader_close(&self->nodes[i].catch_up);
        s_node_destroy(&self->nodes[i]);
    }
    json_decref(self->positions);
    self->positions = NULL;
    drv_dag_handover_close(self);
    free(self->nodes);
    free(self->gave_up);
    char *buffer;
    while ((buffer = zlist_pop(self->spec_buffers))) {
        free(buffer);
    }
    zlist_destroy(&self->spec_buffers);
    msgpack_zone_destroy(&self->spec_zone);
    msgpack_zone_destroy(&self->batch_zone);
    drv_buf_free(&self->out);
    drv_buf_free(&self->tap_buf);
    json_decref(self->tap_samples);
    free((char *)self->who.group);
    free((char *)self->who.pipeline);
    free((char *)self->who.buffer_dir);
    free((char *)self->who.run_dir);
    drv_buffer_close(&self->buffer);
    drv_memory_log_destroy(&self->memory);
    msgpack_sbuffer_destroy(&self->packing);
    free(self);
    *self_p = NULL;
}

bool drv_dag_has_zmq_receivers(const drv_dag_t *self)
{
    for (size_t i = 0; i < self->count; i++) {
        if (self->nodes[i].kind->fed_by_broker) {
            return true;
        }
    }
    return false;
}

//  ---------------------------------------------------------------- flow

int drv_dag_ingest(drv_dag_t *self, const char *node_id, const void *data, size_t size, char *err, size_t errlen)
{
    drv_node_t *node = NULL;
    for (size_t i = 0; i < self->count; i++) {
        if (self->nodes[i].kind->fed_by_broker && strcmp(self->nodes[i].id, node_id) == 0) {
            node = &self->nodes[i];
        }
    }
    if (!node) {
        snprintf(err, errlen, "no receiver:zmq node \"%s\"", node_id);
        self->unowned_errors++;
        return -1;
    }
    return drv_node_emit_packed(node, data, size, err, errlen);
}

//  ---------------------------------------------------------------- settling

int64_t drv_dag_input(const drv_dag_t *self)
{
    return self->input;
}

void drv_dag_flush(drv_dag_t *self)
{
    for (size_t i = 0; i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        if (node->kind->flush) {
            node->kind->flush(node);
        }
    }
}

int64_t drv_dag_settle(drv_dag_t *self)
{
    int64_t settled = self->running;
    for (size_t i = 0; i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        int64_t oldest = node->kind->holding ? node->kind->holding(node) : -1;
        if (oldest >= 0 && oldest - 1 < settled) {
            settled = oldest - 1;
        }
    }
    settled = drv_dag_positions_settled(self, settled);
    drv_dag_handover_settled(self, settled);
    int64_t durable = settled;
    drv_dag_positions_tick(self, drv_time_mono_ms());
    if (self->buffer) {
        char err[300];
        if (drv_buffer_sync_if_due(self->buffer, drv_time_mono_ms(), err, sizeof err) != 0) {
            drv_warn("disk buffer sync failed dir=%s reason=\"%s\"", drv_buffer_dir(self->buffer), err);
        }
        //  What it forgets is never read again: the counts saved say it was
        //  delivered (drv_dag_counts.c), else a restart would not count it out.
        drv_buffer_settled(self->buffer, settled < self->saved_settled ? settled : self->saved_settled);
        durable = drv_buffer_durable(self->buffer);
    }
    bool more_settled = settled > self->settled, more_durable = durable > self->told_durable;
    self->settled = settled > self->settled ? settled : self->settled;
    self->told_durable = durable > self->told_durable ? durable : self->told_durable;
    for (size_t i = 0; (more_settled || more_durable) && i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        //  With a disk buffer, ack: false answers once durable.
        bool durable_is_enough = self->buffer && !node->ack;
        if (node->kind->settled && (durable_is_enough ? more_durable : more_settled)) {
            node->kind->settled(node, durable_is_enough ? self->told_durable : self->settled);
        }
    }
    size_t kept = 0; // what was given up of inputs now answered is forgotten
    for (size_t i = 0; i < self->gave_up_count; i++) {
        if (self->gave_up[i] > self->settled) {
            self->gave_up[kept++] = self->gave_up[i];
        }
    }
    self->gave_up_count = kept;
    return self->buffer ? self->told_durable : self->settled;
}

//  ---------------------------------------------------------------- network receivers

//  The descriptor to poll for node, or -1.
static int s_fd(drv_node_t *node, bool backlogged)
{
    return node->kind->fd && !(backlogged && node->kind->pauses_when_backlogged) ? node->kind->fd(node) : -1;
}

bool drv_dag_ready(drv_dag_t *self)
{
    for (size_t i = 0; i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        if (node->kind->ready && !node->kind->ready(node)) {
            return false;
        }
    }
    return true;
}

bool drv_dag_drained(drv_dag_t *self)
{
    bool backlogged = drv_dag_backlogged(self);
    for (size_t i = 0; i < self->count; i++) {
        //  An exporter behind leaves what it holds to a disk buffer's log:
        //  whoever takes the slot over. The memory log goes with the
        //  instance: it is read to its end or handed over (drv_dag_handover.c).
        if ((!self->nodes[i].lag_next && s_fd(&self->nodes[i], backlogged) >= 0) ||
            (self->memory && self->nodes[i].lag_next)) {
            return false;
        }
    }
    return drv_dag_buffer_empty(self);
}

size_t drv_dag_fds(drv_dag_t *self, int *fds, size_t *nodes, size_t max)
{
    size_t n = 0;
    bool backlogged = drv_dag_backlogged(self);
    for (size_t i = 0; i < self->count && n < max; i++) {
        drv_node_t *node = &self->nodes[i];
        int fd = s_fd(node, backlogged);
        if (fd >= 0) {
            fds[n] = fd;
            nodes[n++] = i;
        }
    }
    return n;
}

int drv_dag_readable(drv_dag_t *self, size_t index)
{
    drv_node_t *node = index < self->count ? &self->nodes[index] : NULL;
    if (!node || !node->kind->readable) {
        return 0;
    }
    msgpack_zone_clear(&self->batch_zone);
    return node->kind->readable(node);
}

bool drv_dag_due(drv_dag_t *self, size_t index)
{
    drv_node_t *node = index < self->count ? &self->nodes[index] : NULL;
    return node && node->kind->timeout_ms && node->kind->timeout_ms(node) == 0;
}

int64_t drv_dag_timeout_ms(drv_dag_t *self)
{
    int64_t soonest = -1;
    if (self->buffer) {
        soonest = drv_buffer_unread(self->buffer) && !drv_dag_exporters_backlogged(self)
                      ? 0
                      : drv_buffer_timeout_ms(self->buffer, drv_time_mono_ms());
    }
    for (size_t i = 0; i < self->count && soonest != 0; i++) {
        soonest = drv_dag_lagging_may_read(&self->nodes[i]) ? 0 : soonest; // catching up
    }
    int64_t handover = drv_dag_handover_timeout_ms(self, drv_time_mono_ms());
    soonest = handover >= 0 && (soonest < 0 || handover < soonest) ? handover : soonest;
    for (size_t i = 0; i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        int64_t ms = node->kind->timeout_ms && node->kind->fd(node) >= 0 ? node->kind->timeout_ms(node) : -1;
        if (ms >= 0 && (soonest < 0 || ms < soonest)) {
            soonest = ms;
        }
    }
    return soonest;
}

void drv_dag_drain(drv_dag_t *self)
{
    self->draining = true;
    for (size_t i = 0; i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        if (node->kind->drain) {
            node->kind->drain(node);
        }
    }
}

int drv_dag_generate(drv_dag_t *self, int64_t now_us, int64_t *wait_us)
{
    int emitted = 0;
    *wait_us = -1;
    for (size_t i = 0; i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        if (!node->kind->generate) {
            continue;
        }
        msgpack_zone_clear(&self->batch_zone);
        if (!self->buffer) { // with one, a generated batch is run as part of the last input fed
            self->running = ++self->input;
        }
        int64_t wait = -1;
        self->generating = true;
        emitted += node->kind->generate(node, now_us, &wait);
        self->generating = false;
        if (wait >= 0 && (*wait_us < 0 || wait < *wait_us)) {
            *wait_us = wait;
        }
    }
    return emitted;
}
