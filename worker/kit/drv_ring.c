/*  drv_ring — see the header. */
#include "drv_ring.h"

#include <stdlib.h>
#include <string.h>

void drv_ring_init(drv_ring_t *self, size_t size)
{
    *self = (drv_ring_t){.size = size};
}

void drv_ring_fini(drv_ring_t *self)
{
    free(self->items);
    *self = (drv_ring_t){.size = self->size};
}

void *drv_ring_at(const drv_ring_t *self, size_t i)
{
    return self->items + ((self->head + i) % self->cap) * self->size;
}

bool drv_ring_push(drv_ring_t *self, const void *item)
{
    if (self->count == self->cap) {
        size_t cap = self->cap ? self->cap * 2 : 64;
        char *grown = malloc(cap * self->size);
        if (!grown) {
            return false;
        }
        for (size_t i = 0; i < self->count; i++) {
            memcpy(grown + i * self->size, drv_ring_at(self, i), self->size);
        }
        free(self->items);
        self->items = grown;
        self->cap = cap;
        self->head = 0;
    }
    memcpy(self->items + ((self->head + self->count++) % self->cap) * self->size, item, self->size);
    return true;
}

void *drv_ring_front(const drv_ring_t *self)
{
    return self->count ? drv_ring_at(self, 0) : NULL;
}

void drv_ring_pop(drv_ring_t *self)
{
    if (self->count) {
        self->head = (self->head + 1) % self->cap;
        self->count--;
    }
}
