/*  drv_hold — see the header. */
#include "drv_hold.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

//  A batch's bytes not yet taken, with the input it came in.
typedef struct held_t held_t;
struct held_t {
    held_t *next;
    int64_t input;
    int64_t taken_ms; // mono: when it was taken
    size_t records;
    size_t len, done;
    bool failing; // an attempt to hand it on failed: it is being retried
    char data[];
};

struct drv_hold_t {
    drv_hold_config_t config;
    drv_queue_t queue;     // how much may be held, and what happens then
    held_t *head, *tail;   // oldest first
    size_t bytes, batches; // what is held
    int timer_fd;
    int64_t backoff_ms;
};

drv_hold_t *drv_hold_new(drv_node_t *node, const drv_hold_config_t *config, char *err, size_t errlen)
{
    drv_hold_t *self = calloc(1, sizeof *self);
    self->config = *config;
    self->config.config = NULL; // read now, not kept
    drv_queue_init(&self->queue, node, config->config, config->queue_bytes);
    self->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (self->timer_fd < 0) {
        snprintf(err, errlen, "timerfd_create: %s", strerror(errno));
        free(self);
        return NULL;
    }
    return self;
}

void drv_hold_destroy(drv_hold_t **self_p)
{
    drv_hold_t *self = *self_p;
    if (!self) {
        return;
    }
    while (self->head) {
        held_t *next = self->head->next;
        free(self->head);
        self->head = next;
    }
    close(self->timer_fd);
    free(self);
    *self_p = NULL;
}

static void s_arm(drv_hold_t *self)
{
    int64_t ms = self->backoff_ms;
    struct itimerspec when = {.it_value = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L}};
    timerfd_settime(self->timer_fd, 0, &when, NULL);
    self->backoff_ms = ms * 2 > self->config.max_ms ? self->config.max_ms : ms * 2;
}

//  Hands bytes to the output, timed (drover_export_duration_seconds: a
//  file's write, a zmq send, as an HTTP exporter's post is).
static ssize_t s_out(drv_hold_t *self, drv_node_t *node, const char *data, size_t len, const char **why)
{
    int64_t start = drv_time_mono_us();
    ssize_t took = self->config.out(self->config.arg, data, len, why);
    drv_node_observe(node, (double)(drv_time_mono_us() - start) / 1e6);
    return took;
}

//  The head waits, retried later: a retry when waiting means the output
//  failed (never an error: its records are not given up).
static void s_wait(drv_hold_t *self, drv_node_t *node, held_t *h, const char *why)
{
    if (self->config.waits_are_errors) {
        drv_node_count_retry(node);
        drv_node_export_warn(node, h->records, why);
        h->failing = true;
    }
    s_arm(self);
}

//  Hands the held batches out, oldest first, as far as the output takes them.
static void s_flush(drv_hold_t *self, drv_node_t *node)
{
    while (self->head) {
        held_t *h = self->head;
        const char *why = "";
        ssize_t took = s_out(self, node, h->data + h->done, h->len - h->done, &why);
        if (took < 0) {
            drv_node_export_error(node, h->records, why); // never to be taken: dropped, its records errors
            drv_node_count_gave_up(node, h->records);
            drv_node_inputs_gave_up(node, &h->input, 1);
        } else {
            h->done += (size_t)took;
            self->bytes -= (size_t)took;
            if (h->done < h->len) {
                s_wait(self, node, h, why);
                return;
            }
            if (h->failing) {
                drv_info("export recovered node=%s records=%zu", node->id, h->records);
            }
            drv_node_count_out(node, h->records);
        }
        self->bytes -= h->len - h->done;
        self->head = h->next;
        if (!self->head) {
            self->tail = NULL;
        }
        self->batches--;
        free(h);
    }
    self->backoff_ms = self->config.first_ms;
}

//  queue.when_full: drop_oldest: past max_bytes, the oldest held batches go
//  (counted), but not the head once partly handed on (its rest must follow).
static void s_make_room(drv_hold_t *self, drv_node_t *node)
{
    held_t **link = &self->head, *previous = NULL;
    while (*link && drv_queue_over(&self->queue, (int64_t)self->bytes)) {
        held_t *h = *link;
        if (h->done > 0 || h == self->tail) {
            previous = h;
            link = &h->next; // the newest stays: it is what was just taken
            continue;
        }
        drv_queue_dropped(&self->queue, node, h->records);
        self->bytes -= h->len;
        self->batches--;
        *link = h->next;
        if (self->tail == h) {
            self->tail = previous;
        }
        free(h);
    }
}

void drv_hold_put(drv_hold_t *self, drv_node_t *node, size_t n, const char *data, size_t len)
{
    size_t done = 0;
    const char *why = "";
    if (!self->head) {
        ssize_t took = s_out(self, node, data, len, &why);
        if (took < 0) {
            drv_node_export_error(node, n, why);
            drv_node_count_gave_up(node, n);
            int64_t input = drv_node_input(node);
            drv_node_inputs_gave_up(node, &input, 1);
            return;
        }
        if ((size_t)took == len) {
            drv_node_count_out(node, n);
            return;
        }
        done = (size_t)took;
    }
    held_t *h = malloc(sizeof *h + (len - done));
    if (!h) {
        drv_node_export_error(node, n, "out of memory holding a batch its output did not take");
        drv_node_count_gave_up(node, n);
        int64_t input = drv_node_input(node);
        drv_node_inputs_gave_up(node, &input, 1);
        return;
    }
    *h = (held_t){.input = drv_node_input(node), .taken_ms = drv_time_mono_ms(), .records = n, .len = len - done};
    memcpy(h->data, data + done, h->len);
    self->bytes += h->len;
    self->batches++;
    if (self->tail) {
        self->tail->next = h; // behind what is held: tried when its turn comes
        self->tail = h;
        s_make_room(self, node);
        return;
    }
    self->head = self->tail = h;
    self->backoff_ms = self->config.first_ms;
    s_wait(self, node, h, why);
}

//  The state's first member is its hold (drv_hold.h).
static drv_hold_t *s_of(drv_node_t *node)
{
    return node->state ? *(drv_hold_t **)node->state : NULL;
}

int drv_hold_node_fd(drv_node_t *node)
{
    drv_hold_t *self = s_of(node);
    return self && self->head ? self->timer_fd : -1;
}

int drv_hold_node_readable(drv_node_t *node)
{
    drv_hold_t *self = s_of(node);
    uint64_t expirations;
    if (self && read(self->timer_fd, &expirations, sizeof expirations) > 0) { // the retry is due (not any wake-up)
        s_flush(self, node);
    }
    return 0;
}

int64_t drv_hold_node_holding(drv_node_t *node)
{
    drv_hold_t *self = s_of(node);
    return self && self->head ? self->head->input : -1;
}

int64_t drv_hold_node_backlog(drv_node_t *node)
{
    drv_hold_t *self = s_of(node);
    int64_t records = 0;
    for (held_t *h = self ? self->head : NULL; h; h = h->next) {
        records += (int64_t)h->records;
    }
    return records;
}

bool drv_hold_node_backlogged(drv_node_t *node)
{
    drv_hold_t *self = s_of(node);
    return self && drv_queue_full(&self->queue, (int64_t)self->bytes, (int64_t)self->batches);
}

void drv_hold_node_queue(drv_node_t *node, int64_t *bytes, int64_t *oldest_ms)
{
    drv_hold_t *self = s_of(node);
    *bytes = self ? (int64_t)self->bytes : 0;
    *oldest_ms = self && self->head ? self->head->taken_ms : 0;
}
