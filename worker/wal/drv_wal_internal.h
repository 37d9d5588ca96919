/*  Shared by drv_wal.c (appending, syncing, settling) and drv_wal_read.c
    (what is on disk at open: scanning, quarantine, replay). */
#ifndef DRV_WAL_INTERNAL_H
#define DRV_WAL_INTERNAL_H

#include "drv_wal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEADER 16                       // length, CRC32C, number
#define MAX_ENTRY (64u * 1024 * 1024)   // larger than any input drover takes: a length past it is damage

typedef struct {
    int64_t first, last;      // input numbers it holds
    int64_t bytes;            // on disk (intact, after a torn tail is cut)
    bool quarantined;         // moved aside: read for replay, never appended to or deleted
    char path[4096];
} segment_t;

struct drv_wal_t {
    char dir[4096];
    int dir_fd;
    size_t segment_bytes;
    segment_t *segments;      // live ones, oldest first (replayed ones first, then new ones)
    size_t count, cap;
    int fd;                   // the newest segment, open for appending (-1: none yet)
    bool dirty;               // appended since the last sync
    bool dir_dirty;           // a segment was created or deleted since
    int64_t bytes;
    int64_t last_found;
    //  Replay: (path, intact bytes) of what was found, read in order.
    segment_t *replay;
    size_t replay_count, replay_at;
    int replay_fd;
    int64_t replay_offset;
    char *buf;
    size_t buf_cap;
};

//  Little-endian fields of an entry's header.
void drv_wal_put32(unsigned char *p, uint32_t v);
void drv_wal_put64(unsigned char *p, uint64_t v);
//  Appends segment to a growing list. -1 out of memory.
int drv_wal_push(segment_t **list, size_t *count, size_t *cap, const segment_t *segment);

#endif
