/*  drv_arena — a region allocator for what lives exactly as long as one
    request: many small allocations taken from a few chunks, all given back
    at once. protobuf-c decodes an OTLP request into one (its free is then a
    no-op), instead of one malloc and one free per message, string and list. */
#ifndef DRV_ARENA_H
#define DRV_ARENA_H

#include <stddef.h>

typedef struct drv_arena_t drv_arena_t;

//  first: the first chunk's size (later chunks double). NULL out of memory.
drv_arena_t *drv_arena_new(size_t first);
void drv_arena_destroy(drv_arena_t **self_p);
//  size bytes, aligned for any type; NULL out of memory.
void *drv_arena_alloc(drv_arena_t *self, size_t size);
//  Bytes taken from the system so far.
size_t drv_arena_size(const drv_arena_t *self);

#endif
