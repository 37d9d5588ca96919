/*  drv_ring — a FIFO of fixed-size items that grows as it must: what the
    pull receivers remember of each input until it settles (the file and
    offset it ends at, the journal cursor). */
#ifndef DRV_RING_H
#define DRV_RING_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *items;
    size_t size; // of an item
    size_t head, count, cap;
} drv_ring_t;

//  An empty ring of items of size bytes.
void drv_ring_init(drv_ring_t *self, size_t size);
void drv_ring_fini(drv_ring_t *self);
//  Copies item in at the back: false when out of memory.
bool drv_ring_push(drv_ring_t *self, const void *item);
//  The oldest item (NULL: none), and taking it away.
void *drv_ring_front(const drv_ring_t *self);
void drv_ring_pop(drv_ring_t *self);
//  The i-th oldest.
void *drv_ring_at(const drv_ring_t *self, size_t i);

#endif
