/*  drv_tail_index — see the header. */
#include "drv_tail_index.h"

#include <stdbool.h>
#include <stdlib.h>

static size_t s_home(const drv_tail_index_t *self, uint64_t dev, uint64_t ino)
{
    uint64_t h = (dev * 0x9E3779B97F4A7C15ull) ^ (ino * 0xC2B2AE3D27D4EB4Full);
    h ^= h >> 31;
    return (size_t)(h * 0x9E3779B97F4A7C15ull >> 32) & (self->cap - 1);
}

static size_t s_find(const drv_tail_index_t *self, uint64_t dev, uint64_t ino)
{
    size_t at = s_home(self, dev, ino);
    while (self->slots[at].file && (self->slots[at].dev != dev || self->slots[at].ino != ino)) {
        at = (at + 1) & (self->cap - 1);
    }
    return at;
}

void *drv_tail_index_get(const drv_tail_index_t *self, uint64_t dev, uint64_t ino)
{
    return self->cap ? self->slots[s_find(self, dev, ino)].file : NULL;
}

int drv_tail_index_put(drv_tail_index_t *self, uint64_t dev, uint64_t ino, void *file)
{
    if (2 * (self->count + 1) > self->cap) {
        drv_tail_index_t grown = {.cap = self->cap ? self->cap * 2 : 64};
        grown.slots = calloc(grown.cap, sizeof *grown.slots);
        if (!grown.slots) {
            return -1;
        }
        for (size_t i = 0; i < self->cap; i++) {
            if (self->slots[i].file) {
                grown.slots[s_find(&grown, self->slots[i].dev, self->slots[i].ino)] = self->slots[i];
                grown.count++;
            }
        }
        free(self->slots);
        *self = grown;
    }
    size_t at = s_find(self, dev, ino);
    self->count += self->slots[at].file == NULL;
    self->slots[at] = (drv_tail_slot_t){dev, ino, file};
    return 0;
}

void drv_tail_index_remove(drv_tail_index_t *self, uint64_t dev, uint64_t ino, const void *file)
{
    if (!self->cap) {
        return;
    }
    size_t hole = s_find(self, dev, ino);
    if (!self->slots[hole].file || self->slots[hole].file != file) {
        return;
    }
    self->slots[hole].file = NULL;
    self->count--;
    //  The entries after it in its run move back where a lookup finds them.
    for (size_t at = (hole + 1) & (self->cap - 1); self->slots[at].file; at = (at + 1) & (self->cap - 1)) {
        size_t home = s_home(self, self->slots[at].dev, self->slots[at].ino);
        bool between = hole <= at ? (home > hole && home <= at) : (home > hole || home <= at);
        if (!between) {
            self->slots[hole] = self->slots[at];
            self->slots[at].file = NULL;
            hole = at;
        }
    }
}

void drv_tail_index_fini(drv_tail_index_t *self)
{
    free(self->slots);
    *self = (drv_tail_index_t){0};
}

uint64_t drv_tail_index_path(const char *path)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        h = (h ^ *c) * 0x100000001b3ull;
    }
    return h;
}
