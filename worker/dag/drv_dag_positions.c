/*  drv_dag_positions — each exporter's own position in the log: a disk
    buffer's, or without one the memory log (docs/operations.md, "Exporter
    queues"). The log is read once, in order, and what is read runs through
    the nodes to every exporter that keeps up. An exporter that holds as
    much as it may falls behind (with a disk buffer: while another is still
    fed, since the log's reading can wait for it): it is left out from the
    next input on and remembers where (lag_next); the log is read again
    from there for it alone while it can take more (drv_dag_catch_up), and
    it is fed with the others again once it has caught up. Without a disk
    buffer, the inputs taken while any exporter is behind are kept in the
    memory log, as they came, and forgotten once nobody behind needs them.
    A disk buffer's log keeps what the exporter furthest behind has not
    settled, and where each stands is saved in the slot (every
    POSITIONS_EVERY_MS), so that after a crash an exporter is not given
    again what it had delivered. Above drv_dag_feed.c, below
    drv_dag_buffered.c. */
#include "drv_dag_internal.h"
#include "drv_memory_log.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <stdio.h>

#define POSITIONS_EVERY_MS 200
#define CATCH_UP_PER_ROUND 64

static bool s_exporter(const drv_node_t *node)
{
    return node->kind->schema->role == DRV_ROLE_EXPORTER;
}

static bool s_backlogged(drv_node_t *node)
{
    return node->kind->backlogged && node->kind->backlogged(node);
}

void drv_dag_positions_open(drv_dag_t *self)
{
    self->rerun_for = -1;
    if (!self->buffer) {
        return;
    }
    json_t *positions = drv_buffer_positions_load(self->buffer);
    drv_dag_counts_restore(self, positions);
    for (size_t i = 0; i < self->count; i++) {
        json_t *upto = json_object_get(positions, self->nodes[i].id);
        if (s_exporter(&self->nodes[i]) && json_is_integer(upto)) {
            self->nodes[i].delivered_upto = json_integer_value(upto);
        }
    }
    self->positions = positions;
}

bool drv_dag_any_behind(const drv_dag_t *self)
{
    for (size_t i = 0; i < self->count; i++) {
        if (self->nodes[i].lag_next > 0) {
            return true;
        }
    }
    return false;
}

int64_t drv_dag_log_bytes_from(drv_dag_t *self, int64_t number)
{
    return self->buffer ? drv_buffer_bytes_from(self->buffer, number) : drv_memory_log_bytes_from(self->memory, number);
}

bool drv_dag_memory_keep(drv_dag_t *self, drv_node_t *node, int64_t number, const msgpack_object *records, size_t n,
                         const void *packed, size_t size, const struct iovec *raw, int raw_count)
{
    if (!self->memory || !drv_dag_any_behind(self)) {
        return true;
    }
    drv_buffer_input_t input;
    drv_dag_log_input(self, node, &input, records, n, packed, size, raw, raw_count);
    return drv_memory_log_append(self->memory, number, &input,
                                 input.time_ms > 0 ? input.time_ms : drv_time_wall_ms()) == 0;
}

bool drv_dag_detach_laggards(drv_dag_t *self)
{
    if (!self->buffer && !self->memory) {
        return drv_dag_exporters_backlogged(self);
    }
    //  With a disk buffer only while another is fed and may take more: a
    //  pipeline whose every exporter is behind just waits, its inputs
    //  unread in the log. The memory log is the only place inputs wait.
    bool flowing = self->memory != NULL;
    for (size_t i = 0; i < self->count && !flowing; i++) {
        drv_node_t *node = &self->nodes[i];
        flowing = s_exporter(node) && !node->lag_next && !s_backlogged(node);
    }
    for (size_t i = 0; i < self->count && flowing; i++) {
        drv_node_t *node = &self->nodes[i];
        if (s_exporter(node) && !node->lag_next && s_backlogged(node)) {
            node->lag_next = self->running + 1;
            node->lag_records = node->lag_oldest_ms = 0;
            drv_dag_positions_say(node, "exporter behind: the others go on, it reads the log again from its position");
        }
    }
    return drv_dag_exporters_backlogged(self);
}

bool drv_dag_lagging_may_read(const drv_node_t *node)
{
    return node->lag_next > 0 && !(node->kind->backlogged && node->kind->backlogged((drv_node_t *)node));
}

int64_t drv_dag_positions_settled(drv_dag_t *self, int64_t settled)
{
    for (size_t i = 0; i < self->count; i++) {
        int64_t lag_next = self->nodes[i].lag_next;
        if (lag_next > 0 && lag_next - 1 < settled) {
            settled = lag_next - 1;
        }
    }
    return settled;
}

//  The next input of the log an exporter behind reads again (from its
//  position on): 1 with it, 0 when none is left, -1 (said in the log).
static int s_read_again(drv_dag_t *self, drv_node_t *exporter, drv_buffer_input_t *input)
{
    if (!self->buffer) {
        return drv_memory_log_read(self->memory, exporter->lag_next, input);
    }
    char err[300];
    if (!exporter->catch_up && !(exporter->catch_up = drv_buffer_reader_open(self->buffer, exporter->lag_next))) {
        return -1;
    }
    int rc = drv_buffer_reader_next(exporter->catch_up, input, err, sizeof err);
    if (rc < 0) {
        drv_error("disk buffer unreadable dir=%s reason=\"%s\"", drv_buffer_dir(self->buffer), err);
    }
    return rc;
}

//  An exporter that fell behind reads the log again from its position,
//  fed alone, while it can take more; once it reaches what the others were
//  fed it is fed with them again.
static int s_catch_up(drv_dag_t *self, int index)
{
    drv_node_t *exporter = &self->nodes[index];
    int64_t fed_to_others = self->running;
    int fed = 0;
    while (fed < CATCH_UP_PER_ROUND && drv_dag_lagging_may_read(exporter)) {
        drv_buffer_input_t input;
        int rc = exporter->lag_next > fed_to_others ? 0 : s_read_again(self, exporter, &input);
        if (rc < 0) {
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
        drv_dag_feed(self, &input, &entry);
        self->running = fed_to_others;
        self->rerun_for = -1;
        exporter->lag_next = input.number + 1;
        drv_dag_positions_read(exporter, input.records, input.time_ms);
        fed++;
    }
    return fed;
}

int drv_dag_catch_up(drv_dag_t *self)
{
    int fed = 0;
    for (size_t i = 0; (self->buffer || self->memory) && i < self->count; i++) {
        if (drv_dag_lagging_may_read(&self->nodes[i])) {
            fed += s_catch_up(self, (int)i);
        }
    }
    return fed;
}

//  Its queue's bound in the log: past it, when_full drop_oldest skips its
//  oldest segment (counted as its queue's drops), block makes the pipeline
//  push back. A buffer with when_full drop_oldest that is full makes the
//  exporter furthest behind skip its oldest segment likewise.
static void s_bound(drv_dag_t *self, drv_node_t *node, bool buffer_full, int64_t furthest)
{
    int64_t held = 0, oldest = 0; // what it holds in memory counts too
    if (node->kind->queue) {
        node->kind->queue(node, &held, &oldest);
    }
    int64_t room = node->log_max_bytes - held;
    int64_t ahead = drv_dag_log_bytes_from(self, node->lag_next);
    bool over = node->log_max_bytes > 0 && ahead > room;
    node->log_full = over && !node->log_drop_oldest;
    if ((over && node->log_drop_oldest) || (buffer_full && node->lag_next == furthest)) {
        int64_t records = 0, to;
        if (over && node->log_drop_oldest) {
            to = self->buffer ? drv_buffer_fit_from(self->buffer, node->lag_next, room > 0 ? room : 0, &records)
                              : drv_memory_log_fit_from(self->memory, node->lag_next, room > 0 ? room : 0, &records);
        } else { // the buffer's oldest segment goes
            to = drv_buffer_segment_after(self->buffer, node->lag_next);
            records = drv_buffer_records_between(self->buffer, node->lag_next, to);
        }
        if (to == node->lag_next) {
            return;
        }
        drv_buffer_reader_close(&node->catch_up);
        node->queue_dropped += records;
        node->lag_records = node->lag_records > records ? node->lag_records - records : 0;
        int64_t now = drv_time_mono_ms();
        if (now >= node->queue_told_ms) {
            drv_warn("exporter queue full: oldest records dropped node=%s records=%lld dropped_total=%lld "
                     "max_bytes=%lld (in the log)",
                     node->id, (long long)records, (long long)node->queue_dropped, (long long)node->log_max_bytes);
            node->queue_told_ms = now + 1000;
        }
        node->lag_next = to > self->running ? 0 : to; // nothing left behind: fed with the others again
    }
}

void drv_dag_positions_passed(drv_dag_t *self, int64_t records, int64_t time_ms)
{
    for (size_t i = 0; i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        if (node->lag_next > 0) {
            node->lag_oldest_ms = node->lag_records ? node->lag_oldest_ms : time_ms;
            node->lag_records += records;
        }
    }
}

void drv_dag_positions_read(drv_node_t *node, int64_t records, int64_t time_ms)
{
    node->lag_records = node->lag_records > records ? node->lag_records - records : 0;
    node->lag_oldest_ms = time_ms;
}

void drv_dag_positions_say(drv_node_t *node, const char *what)
{
    int64_t now = drv_time_mono_ms();
    if (now - node->lag_told_ms >= 5000 || !node->lag_told_ms) {
        node->lag_told_ms = now;
        drv_info("%s node=%s", what, node->id);
    }
}

//  Each exporter's position: what it settled, by the same rule as the
//  pipeline's (drv_dag_settle): up to the input before the oldest it holds,
//  before the one it reads again from, else up to the last fed.
static int64_t s_position(const drv_dag_t *self, drv_node_t *node)
{
    int64_t at = self->running;
    int64_t oldest = node->kind->holding ? node->kind->holding(node) : -1;
    if (oldest >= 0 && oldest - 1 < at) {
        at = oldest - 1;
    }
    if (node->lag_next > 0 && node->lag_next - 1 < at) {
        at = node->lag_next - 1;
    }
    return at > node->delivered_upto ? at : node->delivered_upto;
}

//  Each exporter's position and what was counted (drv_dag_counts.c),
//  written whole when either changed.
static void s_save(drv_dag_t *self)
{
    json_t *positions = drv_dag_counts_saved(self, self->reported);
    int64_t least = self->running;
    for (size_t i = 0; i < self->count; i++) {
        if (s_exporter(&self->nodes[i])) {
            int64_t at = s_position(self, &self->nodes[i]);
            least = at < least ? at : least;
            json_object_set_new(positions, self->nodes[i].id, json_integer(at));
        }
    }
    char err[300];
    if (json_equal(positions, self->positions)) {
        self->saved_settled = least;
        json_decref(positions);
    } else if (drv_buffer_positions_save(self->buffer, positions, err, sizeof err) != 0) {
        drv_warn("disk buffer: exporters' positions not saved reason=\"%s\"", err);
        //  The log forgets what settled all the same: a full disk must be
        //  able to free itself (a crash then may leave a delivery uncounted).
        self->saved_settled = least;
        json_decref(positions);
    } else {
        self->saved_settled = least;
        json_decref(self->positions);
        self->positions = positions;
    }
}

//  The position of the exporter furthest behind (0: none is).
static int64_t s_furthest(const drv_dag_t *self)
{
    int64_t furthest = 0;
    for (size_t i = 0; i < self->count; i++) {
        int64_t at = self->nodes[i].lag_next;
        furthest = at > 0 && (!furthest || at < furthest) ? at : furthest;
    }
    return furthest;
}

void drv_dag_positions_tick(drv_dag_t *self, int64_t now_ms)
{
    if (!self->buffer && !self->memory) {
        return;
    }
    int64_t furthest = s_furthest(self);
    bool buffer_full =
        furthest && self->buffer && drv_buffer_drops_oldest(self->buffer) && drv_buffer_full(self->buffer);
    for (size_t i = 0; i < self->count; i++) {
        if (self->nodes[i].lag_next > 0) {
            s_bound(self, &self->nodes[i], buffer_full, furthest);
        } else {
            self->nodes[i].log_full = false;
        }
    }
    if (!self->buffer) { // what nobody behind stands at or before goes
        furthest = s_furthest(self);
        drv_memory_log_forget(self->memory, furthest ? furthest - 1 : INT64_MAX);
        return;
    }
    if (now_ms < self->positions_due_ms) {
        return;
    }
    self->positions_due_ms = now_ms + POSITIONS_EVERY_MS;
    s_save(self);
}

void drv_dag_positions_final(drv_dag_t *self)
{
    self->reported = true;
    if (self->buffer) {
        s_save(self);
    }
}
