/*  drv_timers — see the header. heap[0] is the earliest; each timer knows
    its slot, so moving or cancelling one is O(log N) with no search. */
#include "drover/drv_timers.h"

#include <stdlib.h>

struct drv_timers_t {
    drv_timer_t **heap;
    size_t count;
    size_t cap;
};

drv_timers_t *drv_timers_new(void)
{
    return calloc(1, sizeof(drv_timers_t));
}

void drv_timers_destroy(drv_timers_t **self_p)
{
    drv_timers_t *self = *self_p;
    if (!self) {
        return;
    }
    *self_p = NULL;
    for (size_t i = 0; i < self->count; i++) {
        self->heap[i]->slot = 0;
    }
    free(self->heap);
    free(self);
}

static void s_place(drv_timers_t *self, size_t i, drv_timer_t *timer)
{
    self->heap[i] = timer;
    timer->slot = i + 1;
}

static void s_up(drv_timers_t *self, size_t i)
{
    drv_timer_t *timer = self->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (self->heap[parent]->due <= timer->due) {
            break;
        }
        s_place(self, i, self->heap[parent]);
        i = parent;
    }
    s_place(self, i, timer);
}

static void s_down(drv_timers_t *self, size_t i)
{
    drv_timer_t *timer = self->heap[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= self->count) {
            break;
        }
        if (child + 1 < self->count && self->heap[child + 1]->due < self->heap[child]->due) {
            child++;
        }
        if (timer->due <= self->heap[child]->due) {
            break;
        }
        s_place(self, i, self->heap[child]);
        i = child;
    }
    s_place(self, i, timer);
}

int drv_timers_set(drv_timers_t *self, drv_timer_t *timer, int64_t due)
{
    if (timer->slot) {
        int64_t was = timer->due;
        timer->due = due;
        if (due < was) {
            s_up(self, timer->slot - 1);
        } else {
            s_down(self, timer->slot - 1);
        }
        return 0;
    }
    if (self->count == self->cap) {
        size_t cap = self->cap ? self->cap * 2 : 64;
        drv_timer_t **grown = realloc(self->heap, cap * sizeof *grown);
        if (!grown) {
            return -1;
        }
        self->heap = grown;
        self->cap = cap;
    }
    timer->due = due;
    s_place(self, self->count++, timer);
    s_up(self, self->count - 1);
    return 0;
}

void drv_timers_cancel(drv_timers_t *self, drv_timer_t *timer)
{
    if (!timer->slot) {
        return;
    }
    size_t i = timer->slot - 1;
    timer->slot = 0;
    drv_timer_t *last = self->heap[--self->count];
    if (last == timer) {
        return;
    }
    s_place(self, i, last);
    if (i > 0 && self->heap[(i - 1) / 2]->due > last->due) {
        s_up(self, i);
    } else {
        s_down(self, i);
    }
}

bool drv_timers_armed(const drv_timer_t *timer)
{
    return timer->slot != 0;
}

int64_t drv_timers_next(const drv_timers_t *self)
{
    return self->count ? self->heap[0]->due : -1;
}

drv_timer_t *drv_timers_pop(drv_timers_t *self, int64_t now)
{
    if (!self->count || self->heap[0]->due > now) {
        return NULL;
    }
    drv_timer_t *timer = self->heap[0];
    drv_timers_cancel(self, timer);
    return timer;
}

size_t drv_timers_count(const drv_timers_t *self)
{
    return self->count;
}
