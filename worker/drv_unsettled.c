/*  drv_unsettled — see drv_unsettled.h. */
#include "drv_unsettled.h"

#include <stdlib.h>
#include <string.h>

void drv_unsettled_push(drv_unsettled_t *self, int64_t input)
{
    if (self->tail == self->size && self->head > 0) {
        //  The settled front makes room: moved once per its length, not per settle.
        size_t live = self->tail - self->head;
        memmove(self->inputs, self->inputs + self->head, live * sizeof *self->inputs);
        self->head = 0;
        self->tail = live;
    }
    if (self->tail == self->size) {
        size_t size = self->size ? self->size * 2 : 64;
        int64_t *grown = realloc(self->inputs, size * sizeof *grown);
        if (!grown) {
            abort(); // 8 bytes per batch held, bounded by the exporters' queues
        }
        self->inputs = grown;
        self->size = size;
    }
    self->inputs[self->tail++] = input;
}

size_t drv_unsettled_settle(drv_unsettled_t *self, int64_t settled)
{
    size_t head = self->head;
    while (self->head < self->tail && self->inputs[self->head] <= settled) {
        self->head++;
    }
    size_t done = self->head - head;
    if (self->head == self->tail) {
        self->head = self->tail = 0;
    }
    return done;
}

size_t drv_unsettled_count(const drv_unsettled_t *self)
{
    return self->tail - self->head;
}

void drv_unsettled_forget(drv_unsettled_t *self)
{
    self->head = self->tail = 0;
}

void drv_unsettled_free(drv_unsettled_t *self)
{
    free(self->inputs);
    *self = (drv_unsettled_t){0};
}
