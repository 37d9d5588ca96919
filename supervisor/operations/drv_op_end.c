/*  drv_op_end — see the header. A fire takes the list first, so a listener
    may add or remove listeners (of this operation too) while it is told. */
#include "drv_op_end.h"

#include <stdlib.h>

typedef struct {
    drv_op_end_fn *fn;
    void *arg;
} listener_t;

struct drv_op_listeners_t {
    listener_t *items;
    size_t count, cap;
};

drv_op_listeners_t *drv_op_listeners_new(void)
{
    return calloc(1, sizeof(drv_op_listeners_t));
}

void drv_op_listeners_destroy(drv_op_listeners_t **self_p)
{
    drv_op_listeners_t *self = *self_p;
    if (!self) {
        return;
    }
    *self_p = NULL;
    drv_op_listeners_fire(self, DRV_OP_DISCARDED);
    free(self->items);
    free(self);
}

int drv_op_listeners_add(drv_op_listeners_t *self, drv_op_end_fn *fn, void *arg)
{
    if (self->count == self->cap) {
        size_t cap = self->cap ? 2 * self->cap : 4;
        listener_t *grown = realloc(self->items, cap * sizeof *grown);
        if (!grown) {
            return -1;
        }
        self->items = grown;
        self->cap = cap;
    }
    self->items[self->count++] = (listener_t){fn, arg};
    return 0;
}

void drv_op_listeners_remove(drv_op_listeners_t *self, void *arg)
{
    for (size_t i = 0; i < self->count; i++) {
        if (self->items[i].arg == arg) {
            self->items[i] = self->items[--self->count];
            return;
        }
    }
}

void drv_op_listeners_fire(drv_op_listeners_t *self, drv_op_end_t how)
{
    listener_t *items = self->items;
    size_t count = self->count;
    self->items = NULL;
    self->count = self->cap = 0;
    for (size_t i = 0; i < count; i++) {
        items[i].fn(items[i].arg, how);
    }
    free(items);
}

size_t drv_op_listeners_size(const drv_op_listeners_t *self)
{
    return self->count;
}
