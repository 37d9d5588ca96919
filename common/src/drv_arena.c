/*  drv_arena — see the header. Chunks are a singly linked list, newest
    first; an allocation that does not fit what is left of the newest gets a
    new chunk at least twice as large. */
#include "drover/drv_arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>

#define ALIGN alignof(max_align_t)

typedef struct chunk_t chunk_t;
struct chunk_t {
    chunk_t *next;
    size_t size;              // bytes of data[]
    size_t used;
    alignas(max_align_t) unsigned char data[];
};

struct drv_arena_t {
    chunk_t *chunks;
    size_t next_size;
    size_t total;
};

static chunk_t *s_chunk(drv_arena_t *self, size_t at_least)
{
    size_t size = self->next_size > at_least ? self->next_size : at_least;
    chunk_t *chunk = malloc(sizeof *chunk + size);
    if (!chunk) {
        return NULL;
    }
    chunk->size = size;
    chunk->used = 0;
    chunk->next = self->chunks;
    self->chunks = chunk;
    self->next_size = size * 2;
    self->total += size;
    return chunk;
}

drv_arena_t *drv_arena_new(size_t first)
{
    drv_arena_t *self = calloc(1, sizeof *self);
    if (self) {
        self->next_size = first > 256 ? first : 256;
    }
    return self;
}

void drv_arena_destroy(drv_arena_t **self_p)
{
    drv_arena_t *self = *self_p;
    if (!self) {
        return;
    }
    *self_p = NULL;
    while (self->chunks) {
        chunk_t *next = self->chunks->next;
        free(self->chunks);
        self->chunks = next;
    }
    free(self);
}

void *drv_arena_alloc(drv_arena_t *self, size_t size)
{
    if (size > SIZE_MAX - 2 * ALIGN) {
        return NULL;
    }
    size = (size + ALIGN - 1) & ~(ALIGN - 1);
    chunk_t *chunk = self->chunks;
    if (!chunk || chunk->size - chunk->used < size) {
        chunk = s_chunk(self, size);
        if (!chunk) {
            return NULL;
        }
    }
    void *p = chunk->data + chunk->used;
    chunk->used += size;
    return p;
}

size_t drv_arena_size(const drv_arena_t *self)
{
    return self->total;
}
