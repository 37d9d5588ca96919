/*  receiver:file — follows files (docs/operations.md, "Reading files"):
    worker/tail/ finds and reads them, this file makes records of their
    lines and keeps checkpoints honest. Lines are peeked at, grouped into
    records (a CRI or docker partial line joins the next; with multiline,
    lines join the message the last line matching start_pattern began),
    and emitted as one input per file and turn; only then are they taken.
    Each input is remembered with the file and where it ends, and when the
    pipeline settles it (exported, or durable in a disk buffer) the file's
    checkpoint may say so. A message still open at a file's end waits for
    more (max_wait_ms), its lines not taken; one that outgrows what the
    file's buffer holds is cut, and the rest of it dropped as it comes. */
#include "drv_checkpoint.h"
#include "drv_file_lines.h"
#include "drv_node.h"
#include "drv_ring.h"
#include "drv_schemas.h"
#include "drv_tail.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINES_PER_INPUT DRV_FILE_LINES_MAX
#define INPUTS_PER_TURN 32
#define SAVE_EVERY_MS 200

//  What the receiver keeps of a file (drv_tail_file_t.user).
typedef struct {
    bool kube_ok;
    drv_kube_path_t kube;
    int64_t peeked_end;          // where the last peek ended
    int64_t grew_ms;             // mono: when that moved (an open message waits max_wait_ms from there)
    bool wants_more;             // the last peek held no whole message: the next reads more first
    drv_file_lines_file_t where; // between messages, or dropping the rest of one cut
} file_state_t;

typedef struct {
    drv_tail_file_t *file;
    uint32_t epoch;
    int64_t end, input;
} pending_t;

typedef struct {
    drv_file_lines_t *making; // lines into records
    int64_t poll_ms, next_scan_ms, next_save_ms;
    drv_tail_t *tail;
    drv_ring_t pending; // pending_t: inputs not settled, oldest first
    drv_tail_line_t lines[LINES_PER_INPUT];
    size_t turn;   // the file a turn starts with (each gets its share)
    bool more;     // a file had more than a turn took
    bool draining; // reads nothing more
    char checkpoint_dir[4096];
} file_rx_t;

static void s_forget(void *user)
{
    free(user);
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    file_rx_t *self = calloc(1, sizeof *self);
    node->state = self;
    if (!self) {
        snprintf(err, errlen, "node %s: out of memory", node->id);
        return -1;
    }
    const drv_dag_identity_t *who = drv_node_identity(node);
    if (!who->buffer_dir) {
        snprintf(err, errlen, "node %s: receiver:file keeps its checkpoints under engine.buffer_dir: set it", node->id);
        return -1;
    }
    drv_ring_init(&self->pending, sizeof(pending_t));
    self->poll_ms = json_integer_value(json_object_get(config, "poll_interval_ms"));
    char why[400];
    if (!(self->making = drv_file_lines_new(config, why, sizeof why))) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    if (drv_checkpoint_dir(who->buffer_dir, who->group, who->pipeline, self->checkpoint_dir,
                           sizeof self->checkpoint_dir, why, sizeof why) != 0) {
        snprintf(err, errlen, "node %s: checkpoints: %s", node->id, why);
        return -1;
    }
    const char *start_at = json_string_value(json_object_get(config, "start_at"));
    drv_tail_config_t tail = {.include = json_object_get(config, "include"),
                              .exclude = json_object_get(config, "exclude"),
                              .start_at_beginning = start_at && !strcmp(start_at, "beginning"),
                              .max_line_bytes = (size_t)json_integer_value(json_object_get(config, "max_line_bytes")),
                              .generation = who->generation,
                              .core = who->core,
                              .checkpoint_dir = self->checkpoint_dir};
    self->tail = drv_tail_new(&tail, s_forget, why, sizeof why);
    if (!self->tail) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    return 0;
}

static void s_destroy(drv_node_t *node)
{
    file_rx_t *self = node->state;
    if (!self) {
        return;
    }
    drv_tail_destroy(&self->tail); // saves what is settled
    drv_file_lines_destroy(&self->making);
    drv_ring_fini(&self->pending);
    free(self);
}

//  ---------------------------------------------------------------- reading

//  The lines of an input as records; when they hold none and no more can
//  be peeked (a whole input's lines, or the file's buffer full), what is
//  open is whole (a message of that many lines) or cut (that many bytes).
static drv_file_lines_made_t s_make(file_rx_t *self, drv_node_t *node, drv_tail_file_t *file, file_state_t *state,
                                    size_t lines, drv_file_lines_close_t close, msgpack_object *records)
{
    const drv_kube_path_t *kube = state->kube_ok ? &state->kube : NULL;
    drv_file_lines_made_t made =
        drv_file_lines_records(self->making, node, file, &state->where, kube, self->lines, lines, close, records);
    if (made.records == 0 && made.dropped < 0 && close == DRV_FILE_LINES_OPEN &&
        (file->full || lines == LINES_PER_INPUT)) {
        close = file->full ? DRV_FILE_LINES_CUT : DRV_FILE_LINES_WHOLE;
        made =
            drv_file_lines_records(self->making, node, file, &state->where, kube, self->lines, lines, close, records);
    }
    return made;
}

//  One input of file's lines, when it has whole records: 1 emitted, 0
//  nothing to emit, -1 the pipeline took nothing (push back).
static int s_read_file(drv_node_t *node, file_rx_t *self, drv_tail_file_t *file, int64_t now)
{
    if (!file->user) {
        file_state_t *state = calloc(1, sizeof *state);
        if (!state) {
            return 0;
        }
        //  Used with kubernetes: true: the pod of the path the file was first
        //  followed under (a rotation renames it, the pod stays).
        state->kube_ok = drv_kube_path(file->origin, &state->kube);
        file->user = state;
    }
    file_state_t *state = file->user;
    msgpack_zone_clear(drv_node_zone(node));
    size_t lines = drv_tail_peek(self->tail, file, self->lines, LINES_PER_INPUT, state->wants_more);
    state->wants_more = false;
    if (lines == 0) {
        return 0;
    }
    int64_t peeked = self->lines[lines - 1].end;
    if (peeked != state->peeked_end) {
        state->peeked_end = peeked;
        state->grew_ms = now;
    }
    //  What is open at the end is whole when nothing more can come, or after
    //  max_wait_ms without more.
    bool waited = file->at_end && now - state->grew_ms >= drv_file_lines_wait_ms(self->making);
    bool all = waited || (file->gone && file->at_end);
    msgpack_object *records = drv_node_alloc(node, lines * sizeof *records);
    drv_file_lines_made_t made =
        s_make(self, node, file, state, lines, all ? DRV_FILE_LINES_WHOLE : DRV_FILE_LINES_OPEN, records);
    int rc = 0;
    if (made.records > 0) {
        if (!drv_node_emit_objects(node, records, made.records)) {
            rc = -1;
        } else {
            pending_t p = {.file = file, .epoch = file->epoch, .end = made.end, .input = drv_node_taken(node)};
            if (!drv_ring_push(&self->pending, &p)) {
                abort(); // one per input not settled: bounded by what the pipeline takes
            }
            file->unsettled++;
            //  Counted once taken: a line read again is not counted twice.
            for (size_t i = 0; i < lines && self->lines[i].end <= made.end; i++) {
                made.cut += self->lines[i].cut;
            }
            for (size_t i = 0; i < made.cut; i++) {
                drv_node_record_error(node, "a line longer than max_line_bytes was cut there");
            }
            state->where = made.where;
            drv_tail_take(self->tail, file, made.end);
            rc = 1;
            self->more |= lines == LINES_PER_INPUT || !file->at_end; // more to read at once
        }
    } else if (made.dropped >= 0) { // only the rest of a message cut: gone, and read on at once
        state->where = made.where;
        drv_tail_drop(self->tail, file, made.dropped);
        self->more = true;
    } else if (!all && !file->at_end) { // a message not whole yet, and the file has more: read it
        state->wants_more = true;
        self->more = true;
    } else if (!all && lines > 0 && !file->full) { // or once it grows (the peek looks whether it did)
        state->wants_more = true;
    }
    drv_file_lines_done(self->making);
    return rc;
}

static int s_readable(drv_node_t *node)
{
    file_rx_t *self = node->state;
    int64_t now = drv_time_mono_ms();
    if (drv_tail_events(self->tail)) {
        self->next_scan_ms = now; // a file appeared: found now, not at the next poll
    }
    bool short_ = false;
    if (now >= self->next_scan_ms && !self->draining) {
        short_ = drv_tail_scan(self->tail, now);
        self->next_scan_ms = short_ ? now : now + self->poll_ms; // stopped short: on at once
    }
    self->more = short_;
    size_t count;
    drv_tail_file_t **files = drv_tail_files(self->tail, &count);
    int inputs = 0;
    for (size_t k = 0; k < count && !self->draining && inputs < INPUTS_PER_TURN; k++) {
        drv_tail_file_t *file = files[(self->turn + k) % count];
        if (file->quiet) {
            continue; // read to its end, nothing heard since
        }
        if (drv_node_backlogged(node)) {
            break;
        }
        int rc = s_read_file(node, self, file, now);
        if (rc < 0) {
            break;
        }
        inputs += rc;
    }
    self->turn++;
    if (now >= self->next_save_ms || self->draining) {
        bool left = drv_tail_save(self->tail, now);
        self->next_save_ms = left ? now : now + SAVE_EVERY_MS; // more to save: soon, a bounded number a turn
    }
    return inputs;
}

static int s_fd(drv_node_t *node)
{
    file_rx_t *self = node->state;
    return self->draining ? -1 : drv_tail_fd(self->tail);
}

static int64_t s_timeout_ms(drv_node_t *node)
{
    file_rx_t *self = node->state;
    if (self->draining) {
        return -1;
    }
    if (self->more && !drv_node_backlogged(node)) {
        return 0;
    }
    int64_t now = drv_time_mono_ms(), due = self->next_scan_ms;
    due = self->next_save_ms < due ? self->next_save_ms : due;
    return due <= now ? 0 : due - now;
}

static void s_settled(drv_node_t *node, int64_t upto)
{
    file_rx_t *self = node->state;
    pending_t *p;
    while ((p = drv_ring_front(&self->pending)) && p->input <= upto) {
        p->file->unsettled--;
        drv_tail_settled(self->tail, p->file, p->epoch, p->end);
        drv_ring_pop(&self->pending);
    }
}

static void s_drain(drv_node_t *node)
{
    file_rx_t *self = node->state;
    self->draining = true; // what was taken settles; the checkpoints are saved when the instance ends
}

const drv_node_kind_t drv_receiver_file = {
    .schema = &drv_schema_receiver_file,
    .init = s_init,
    .destroy = s_destroy,
    .fd = s_fd,
    .readable = s_readable,
    .timeout_ms = s_timeout_ms,
    .settled = s_settled,
    .drain = s_drain,
    .pauses_when_backlogged = true,
};
