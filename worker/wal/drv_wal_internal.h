/*  Shared by drv_wal.c (opening, appending, syncing, settling) and
    drv_wal_read.c (reading entries back, cutting damage into quarantine). */
#ifndef DRV_WAL_INTERNAL_H
#define DRV_WAL_INTERNAL_H

#include "drv_wal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEADER 28                       // length, CRC32C, number, time, records
#define MAX_ENTRY (64u * 1024 * 1024)   // larger than any input drover takes: a length past it is damage

typedef struct {
    int64_t first, last;      // input numbers it holds (last: the next one's first - 1 until read)
    int64_t bytes;            // on disk (intact: the newest is checked at open, the others as read)
    int64_t records, read_records; // in it (by its headers, at open), and read so far
    char path[4096];
} segment_t;

struct drv_wal_t {
    char dir[4096];
    char quarantine[4096];
    int dir_fd;
    size_t segment_bytes;
    segment_t *segments;      // oldest first; the newest is the one appended to
    size_t count, cap;
    int fd;                   // the newest segment, open for appending (-1: none yet)
    bool dirty;               // appended since the last sync
    bool dir_dirty;           // a segment was created or deleted since
    int64_t bytes;
    int64_t last;             // the newest input's number
    int64_t found_records;    // records in what was found at open
    drv_wal_damage_t damage;
    //  Reading: the segment and offset of the next entry to read.
    size_t read_index;
    int64_t read_offset;
    int read_fd;              // segments[read_index], or -1
    char *buf;
    size_t buf_cap;
};

typedef enum { ENTRY_OK, ENTRY_END, ENTRY_TORN, ENTRY_BAD, ENTRY_ERROR } drv_wal_found_t;

//  The entry at offset of fd (size bytes long): read into self->buf
//  (number, time, records, payload) and checked.
drv_wal_found_t drv_wal_entry_at(drv_wal_t *self, int fd, int64_t offset, int64_t size, drv_wal_entry_t *entry);
//  Cuts segment at offset: the bytes from there are kept in quarantine
//  under prefix-{name} and the file truncated. 0, or -1 with err.
int drv_wal_cut(drv_wal_t *self, segment_t *segment, int64_t offset, const char *prefix, char *err, size_t errlen);
//  The records of the entries in the first bytes of the segment at path,
//  from their headers alone (their checksums are checked as they are read).
int64_t drv_wal_count_records(const char *path, int64_t bytes);
void drv_wal_put32(unsigned char *p, uint32_t v);
void drv_wal_put64(unsigned char *p, uint64_t v);

#endif
