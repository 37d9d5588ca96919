/*  drv_tail_index — the files a receiver:file instance follows, by
    identity (device and inode): found in constant time, so that a scan of
    thousands of files in one directory stays linear (docs/security.md).
    A second index keys them by their path's hash (drv_tail_index_path),
    for the names inotify events give. Open addressing with linear
    probing; a removal shifts back the entries after it, so no tombstone
    is ever left. */
#ifndef DRV_TAIL_INDEX_H
#define DRV_TAIL_INDEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t dev, ino;
    void *file; // NULL: an empty slot
} drv_tail_slot_t;

typedef struct {
    drv_tail_slot_t *slots;
    size_t cap, count; // cap: a power of two, at most half full
} drv_tail_index_t;

//  The file of that identity, or NULL.
void *drv_tail_index_get(const drv_tail_index_t *self, uint64_t dev, uint64_t ino);
//  Adds it, or replaces what was there: 0, or -1 out of memory.
int drv_tail_index_put(drv_tail_index_t *self, uint64_t dev, uint64_t ino, void *file);
//  Removes the entry when it is file's.
void drv_tail_index_remove(drv_tail_index_t *self, uint64_t dev, uint64_t ino, const void *file);
//  A path as a key (FNV-1a): a lookup by it is confirmed by comparing the path.
uint64_t drv_tail_index_path(const char *path);
void drv_tail_index_fini(drv_tail_index_t *self);

#endif
