/*  drv_export — see drv_export.h. This file: an exporter's batches, from
    the records it takes to the batches it holds, and the node hooks;
    drv_export_post.c posts them. */
#include "drv_export_internal.h"
#include "drv_gzip.h"
#include "drv_record_copy.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

//  ---------------------------------------------------------------- building

drv_export_t *drv_export_new(drv_node_t *node, const json_t *config, const drv_export_format_t *format, char *err,
                             size_t errlen)
{
    static bool curl_ready = false;
    if (!curl_ready) {
        curl_global_init(CURL_GLOBAL_DEFAULT); // single-threaded instance: first use is safe here
        curl_ready = true;
    }
    drv_export_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(err, errlen, "node %s: out of memory", node->id);
        return NULL;
    }
    self->node = node;
    self->format = *format;
    int curl = drv_curl_loop_init(&self->curl);
    if (curl == 0 && format->grpc) {
        //  Neither reused nor shared: see drv_export_grpc_setup.
        curl_multi_setopt(self->curl.multi, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING);
    }
    self->seed = (unsigned)drv_time_mono_us() ^ (unsigned)getpid();
    char why[300];
    if (curl != 0) {
        snprintf(err, errlen, "node %s: cannot set up the HTTP client", node->id);
        drv_export_destroy(&self);
        return NULL;
    }
    if (drv_export_settings_read(&self->settings, config, why, sizeof why) != 0) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        drv_export_destroy(&self);
        return NULL;
    }
    self->settings.gzip &= !format->sender && !format->headers; // a protocol compresses as it says
    drv_queue_init(&self->queue, node, config, DRV_EXPORT_QUEUE_BYTES);
    return self;
}

void drv_export_batch_free(drv_export_t *self, batch_t *batch)
{
    if (batch->sending) {
        drv_export_finish(self, batch);
    }
    if (batch->sent) {
        self->format.sender->forget(self->format.arg, batch->sent);
    }
    if (batch->zone_ready) {
        msgpack_zone_destroy(&batch->zone);
    }
    free(batch->taken);
    free(batch->body);
    free(batch->inputs);
    free(batch);
}

void drv_export_destroy(drv_export_t **self_p)
{
    drv_export_t *self = *self_p;
    if (!self) {
        return;
    }
    while (self->head) {
        batch_t *next = self->head->next;
        drv_export_batch_free(self, self->head);
        self->head = next;
    }
    for (size_t i = 0; i < DRV_EXPORT_LANES; i++) {
        if (self->lanes[i].zone_ready) {
            msgpack_zone_destroy(&self->lanes[i].zone);
        }
        free(self->lanes[i].records);
        free(self->lanes[i].inputs);
    }
    drv_curl_loop_fini(&self->curl);
    drv_export_settings_free(&self->settings);
    free(self);
    *self_p = NULL;
}

//  ---------------------------------------------------------------- batches

static size_t s_lane_bytes(const drv_export_t *self)
{
    size_t bytes = 0;
    for (int i = 0; i < DRV_EXPORT_LANES; i++) {
        bytes += self->lanes[i].bytes;
    }
    return bytes;
}

//  queue.when_full: drop_oldest: past max_bytes, the oldest batches not
//  being posted go (counted); their input is then settled.
static void s_make_room(drv_export_t *self)
{
    batch_t *batch = self->head;
    while (batch && drv_queue_over(&self->queue, (int64_t)(self->queued_bytes + s_lane_bytes(self)))) {
        batch_t *next = batch->next;
        if (!batch->sending) {
            drv_queue_dropped(&self->queue, self->node, batch->records);
            drv_export_unlink(self, batch);
            drv_export_batch_free(self, batch);
        }
        batch = next;
    }
}

//  Closes the lane's open batch: its records (their zone) go to a batch
//  at the queue's end, encoded when first posted.
void drv_export_close(drv_export_t *self, int lane_index)
{
    lane_t *lane = &self->lanes[lane_index];
    if (lane->count == 0) {
        return;
    }
    batch_t *batch = calloc(1, sizeof *batch);
    if (!batch || !msgpack_zone_init(&batch->zone, 64 * 1024)) {
        drv_node_export_error(self->node, lane->count, "out of memory closing a batch");
        drv_node_count_gave_up(self->node, lane->count);
        drv_node_inputs_gave_up(self->node, lane->inputs, lane->input_count);
        free(batch);
        msgpack_zone_clear(&lane->zone);
        lane->count = lane->bytes = lane->input_count = 0;
        return;
    }
    batch->zone_ready = true;
    msgpack_zone_swap(&batch->zone, &lane->zone); // the lane goes on in the fresh one
    batch->taken = lane->records;
    lane->records = NULL;
    lane->cap = 0;
    batch->lane = lane_index;
    batch->packed = lane->bytes;
    batch->records = lane->count;
    batch->first_input = lane->first_input;
    batch->inputs = lane->inputs;
    batch->input_count = lane->input_count;
    lane->inputs = NULL;
    lane->input_count = lane->input_cap = 0;
    batch->taken_ms = lane->opened_ms;
    batch->backoff_ms = self->settings.initial_ms;
    if (self->tail) {
        self->tail->next = batch;
    } else {
        self->head = batch;
    }
    self->tail = batch;
    self->queued_bytes += batch->packed;
    self->batches++;
    self->lane_batches[lane_index]++;
    lane->count = 0;
    lane->bytes = 0;
    if (self->format.sender && self->format.sender->closed) {
        self->format.sender->closed(self->format.arg, batch, &batch->sent);
    }
    s_make_room(self);
}

int drv_export_encode(drv_export_t *self, batch_t *batch, char *err, size_t errlen)
{
    if (self->format.sender && self->format.sender->closed) {
        return 0; // the kind's own (drv_export_sender_t)
    }
    drv_buf_t body = {0};
    int rc = self->format.encode(self->format.arg, batch->lane, batch->taken, batch->records, &body, err, errlen);
    if (rc == 0 && self->settings.gzip) {
        char *zipped = NULL;
        size_t zipped_size = 0;
        rc = drv_gzip_deflate(body.data, body.len, &zipped, &zipped_size);
        drv_buf_free(&body);
        body = (drv_buf_t){.data = zipped, .len = zipped_size, .capacity = zipped_size};
        if (rc != 0) {
            snprintf(err, errlen, "out of memory compressing a batch");
        }
    }
    if (rc == 0 && self->format.grpc) {
        rc = drv_export_grpc_frame(&body.data, &body.len, self->settings.gzip);
        body.capacity = body.len;
    }
    if (rc != 0) {
        drv_buf_free(&body);
        return -1;
    }
    batch->body = body.data;
    batch->size = body.len;
    return 0;
}

void drv_export_record(drv_export_t *self, int lane_index, const msgpack_object *record)
{
    lane_t *lane = &self->lanes[lane_index];
    if (lane->count == 0) {
        lane->first_input = drv_node_input(self->node);
        lane->opened_ms = drv_time_mono_ms();
    }
    if (!lane->zone_ready) {
        lane->zone_ready = msgpack_zone_init(&lane->zone, 64 * 1024);
    }
    if (lane->count == lane->cap) {
        size_t cap = lane->cap ? 2 * lane->cap : 256;
        msgpack_object *grown = realloc(lane->records, cap * sizeof *grown);
        if (grown) {
            lane->records = grown;
            lane->cap = cap;
        }
    }
    size_t bytes = lane->zone_ready && lane->count < lane->cap
                       ? drv_record_copy(&lane->zone, record, &lane->records[lane->count])
                       : 0;
    if (bytes == 0) {
        drv_node_export_error(self->node, 1, "out of memory taking a record");
        drv_node_count_gave_up(self->node, 1);
        int64_t input = drv_node_input(self->node);
        drv_node_inputs_gave_up(self->node, &input, 1);
        return;
    }
    lane->count++;
    int64_t input = drv_node_input(self->node);
    if (lane->input_count == 0 || lane->inputs[lane->input_count - 1] != input) {
        if (lane->input_count == lane->input_cap) {
            size_t cap = lane->input_cap ? 2 * lane->input_cap : 16;
            int64_t *grown = realloc(lane->inputs, cap * sizeof *grown);
            lane->input_cap = grown ? cap : lane->input_cap;
            lane->inputs = grown ? grown : lane->inputs;
        }
        if (lane->input_count < lane->input_cap) {
            lane->inputs[lane->input_count++] = input;
        }
    }
    lane->bytes += bytes;
    if (lane->count >= self->settings.max_records || lane->bytes >= self->settings.max_bytes) {
        drv_export_close(self, lane_index);
    }
}

void drv_export_unlink(drv_export_t *self, batch_t *batch)
{
    batch_t **link = &self->head, *previous = NULL;
    while (*link && *link != batch) {
        previous = *link;
        link = &(*link)->next;
    }
    if (*link) {
        *link = batch->next;
        if (self->tail == batch) {
            self->tail = previous;
        }
        self->queued_bytes -= batch->packed;
        self->batches--;
        self->lane_batches[batch->lane]--;
    }
}

int drv_export_batch_lane(const batch_t *batch)
{
    return batch->lane;
}

const msgpack_object *drv_export_batch_records(const batch_t *batch, size_t *count)
{
    *count = batch->records;
    return batch->taken;
}

const msgpack_object *drv_export_open_records(const drv_export_t *self, int lane, size_t *count, size_t *bytes)
{
    *count = self->lanes[lane].count;
    *bytes = self->lanes[lane].bytes;
    return self->lanes[lane].records;
}

//  ---------------------------------------------------------------- node hooks

static drv_export_t *s_of(drv_node_t *node)
{
    return node->state ? *(drv_export_t **)node->state : NULL;
}

static bool s_holds_nothing(const drv_export_t *self)
{
    for (int i = 0; i < DRV_EXPORT_LANES; i++) {
        if (self->lanes[i].count > 0) {
            return false;
        }
    }
    return self->head == NULL;
}

int drv_export_node_fd(drv_node_t *node)
{
    drv_export_t *self = s_of(node);
    if (!self || (self->draining && s_holds_nothing(self))) {
        return -1;
    }
    return self->format.sender ? self->format.sender->fd(self->format.arg) : self->curl.epoll_fd;
}

int drv_export_node_readable(drv_node_t *node)
{
    drv_export_t *self = s_of(node);
    if (self) {
        drv_export_run(self);
    }
    return 0;
}

int64_t drv_export_node_timeout_ms(drv_node_t *node)
{
    drv_export_t *self = s_of(node);
    if (!self) {
        return -1;
    }
    int64_t now = drv_time_mono_ms();
    const drv_export_sender_t *sender = self->format.sender;
    int64_t due = !sender ? self->curl.due_ms : sender->due_ms ? sender->due_ms(self->format.arg) : -1;
    for (int i = 0; i < DRV_EXPORT_LANES; i++) {
        if (self->lanes[i].count > 0) {
            int64_t closes =
                self->draining || self->flushing ? now : self->lanes[i].opened_ms + self->settings.max_delay_ms;
            due = due < 0 || closes < due ? closes : due;
        }
    }
    unsigned seen = 0;
    for (batch_t *batch = self->head; batch && self->in_flight < drv_export_in_flight(self); batch = batch->next) {
        if (!drv_export_lane_turn(self, batch, &seen)) {
            continue; // waits for its lane's older batch, not for a time
        }
        if (!batch->sending) {
            due = due < 0 || batch->next_attempt_ms < due ? batch->next_attempt_ms : due;
        }
        if (batch->failing) {
            break; // the ones behind it wait for it (drv_export_run)
        }
    }
    return due < 0 ? -1 : due <= now ? 0 : due - now;
}

void drv_export_node_drain(drv_node_t *node)
{
    drv_export_t *self = s_of(node);
    if (self) {
        self->draining = true;
    }
}

void drv_export_node_flush(drv_node_t *node)
{
    drv_export_t *self = s_of(node);
    if (self) {
        self->flushing = true;
    }
}

int64_t drv_export_node_holding(drv_node_t *node)
{
    drv_export_t *self = s_of(node);
    int64_t oldest = -1;
    for (int i = 0; self && i < DRV_EXPORT_LANES; i++) {
        if (self->lanes[i].count > 0 && (oldest < 0 || self->lanes[i].first_input < oldest)) {
            oldest = self->lanes[i].first_input;
        }
    }
    //  Each lane's batches are in the list in the order they closed: the
    //  first of each lane is its oldest, so the walk stops once it met
    //  every lane that has any (a backlog of thousands is not walked).
    unsigned seen = 0, wanted = 0;
    for (int i = 0; self && i < DRV_EXPORT_LANES; i++) {
        wanted |= self->lane_batches[i] > 0 ? 1u << i : 0;
    }
    for (batch_t *batch = self ? self->head : NULL; batch && seen != wanted; batch = batch->next) {
        if (!(seen & (1u << batch->lane)) && (oldest < 0 || batch->first_input < oldest)) {
            oldest = batch->first_input;
        }
        seen |= 1u << batch->lane;
    }
    return oldest;
}

bool drv_export_node_backlogged(drv_node_t *node)
{
    drv_export_t *self = s_of(node);
    return self &&
           drv_queue_full(&self->queue, (int64_t)(self->queued_bytes + s_lane_bytes(self)), (int64_t)self->batches);
}

int64_t drv_export_node_backlog(drv_node_t *node)
{
    drv_export_t *self = s_of(node);
    int64_t records = 0;
    for (int i = 0; self && i < DRV_EXPORT_LANES; i++) {
        records += (int64_t)self->lanes[i].count;
    }
    for (batch_t *batch = self ? self->head : NULL; batch; batch = batch->next) {
        records += (int64_t)batch->records;
    }
    return records;
}

void drv_export_node_queue(drv_node_t *node, int64_t *bytes, int64_t *oldest_ms)
{
    drv_export_t *self = s_of(node);
    *bytes = self ? (int64_t)(self->queued_bytes + s_lane_bytes(self)) : 0;
    *oldest_ms = 0;
    for (int i = 0; self && i < DRV_EXPORT_LANES; i++) {
        if (self->lanes[i].count > 0 && (!*oldest_ms || self->lanes[i].opened_ms < *oldest_ms)) {
            *oldest_ms = self->lanes[i].opened_ms;
        }
    }
    for (batch_t *batch = self ? self->head : NULL; batch; batch = batch->next) {
        if (!*oldest_ms || batch->taken_ms < *oldest_ms) {
            *oldest_ms = batch->taken_ms;
        }
    }
}

int64_t drv_export_node_hand_over(drv_node_t *node, bool (*put)(void *arg, const msgpack_object *records, size_t n),
                                  void *arg, bool forget)
{
    drv_export_t *self = s_of(node);
    int64_t records = 0;
    for (int i = 0; self && i < DRV_EXPORT_LANES; i++) {
        drv_export_close(self, i); // what is open goes too, as a batch
    }
    for (batch_t *batch = self ? self->head : NULL, *next; batch; batch = next) {
        next = batch->next;
        records += (int64_t)batch->records;
        if (forget) {
            drv_export_unlink(self, batch);
            drv_export_batch_free(self, batch); // a post under way is abandoned: it may arrive twice
        } else if (batch->taken && !put(arg, batch->taken, batch->records)) {
            return -1;
        }
    }
    return records;
}
