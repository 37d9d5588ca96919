/*  Shared by drv_wal.c (opening, appending, syncing, settling),
    drv_wal_read.c (reading entries back), drv_wal_quarantine.c (what is
    damaged or is no segment at all, moved out of the log's way) and, below
    them all, drv_wal_file.c (opening a segment, exact reads).

    Everything in the log's directory is opened relative to it (dir_fd),
    never through a link, and only when it is a regular file: the names in
    it are the log's own, but whoever can write there must not make droverd
    truncate, write or block on something else (docs/security.md). */
#ifndef DRV_WAL_INTERNAL_H
#define DRV_WAL_INTERNAL_H

#include "drv_wal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEADER 28                     // length, CRC32C, number, time, records
#define MAX_ENTRY (64u * 1024 * 1024) // larger than any input drover takes: a length past it is damage

//  Where an entry read is kept, one at a time per reader.
typedef struct {
    char *data;
    size_t cap;
} drv_wal_buf_t;

typedef struct {
    int64_t first, last;           // input numbers it holds (last: the next one's first - 1 until read)
    int64_t bytes;                 // on disk (intact: the newest is checked at open, the others as read)
    int64_t records, read_records; // in it (by its headers, at open), and read so far
    char name[32];                 // in the log's directory: {first:020}.wal
    char path[4096];               // the same, whole, for messages
} segment_t;

struct drv_wal_t {
    char dir[4096];
    char quarantine[4096];
    int dir_fd;
    int quarantine_fd; // opened when first needed (-1: not yet, -2: cannot be)
    char notes[512];   // what was set aside at open, for the owner to log
    size_t segment_bytes;
    segment_t *segments; // oldest first; the newest is the one appended to
    size_t count, cap;
    int fd;         // the newest segment, open for appending (-1: none yet)
    bool dirty;     // appended since the last sync
    bool dir_dirty; // a segment was created or deleted since
    int64_t bytes;
    int64_t last;          // the newest input's number
    int64_t found_records; // records in what was found at open
    drv_wal_damage_t damage;
    //  Reading: the segment and offset of the next entry to read.
    size_t read_index;
    int64_t read_offset;
    int read_fd; // segments[read_index], or -1
    drv_wal_buf_t buf;
    //  drv_wal_bytes_from's last answer: where entry offset_of_number
    //  starts in the segment whose first is offset_of_segment.
    int64_t offset_of_number, offset_of_segment, offset_of;
};

typedef enum { ENTRY_OK, ENTRY_END, ENTRY_TORN, ENTRY_BAD, ENTRY_ERROR } drv_wal_found_t;

//  The entry at offset of fd (size bytes long): read into self->buf
//  (number, time, records, payload) and checked.
drv_wal_found_t drv_wal_entry_at(drv_wal_buf_t *buf, int fd, int64_t offset, int64_t size, drv_wal_entry_t *entry);
//  The header of the entry at offset of fd: its number, length and
//  records. 1, or 0 (none whole there).
int drv_wal_header_at(int fd, int64_t offset, int64_t size, int64_t *number, uint32_t *len, uint32_t *records);
//  Opens a segment in the log's directory with flags (O_RDONLY, O_RDWR):
//  a regular file only, never through a link, never waiting on a FIFO.
//  The descriptor, or -1 with errno (EINVAL: it is not a regular file).
int drv_wal_open_segment(const drv_wal_t *self, const segment_t *segment, int flags);
//  Cuts segment at offset: the bytes from there are kept in quarantine
//  under prefix-{name} when they fit, and the file is truncated either way
//  (damage never needs free space to be got past: what did not fit is
//  counted in unkept_bytes). 0, or -1 with err when the segment itself
//  cannot be cut.
int drv_wal_cut(drv_wal_t *self, segment_t *segment, int64_t offset, const char *prefix, char *err, size_t errlen);
//  Something named like a segment that is not a regular file (a link, a
//  FIFO, a directory): moved into quarantine as odd-{name}, or left where
//  it is when it cannot be; never opened. Noted in self->notes.
void drv_wal_set_aside(drv_wal_t *self, const char *name, const char *what);
//  The records of the entries in the first bytes of segment, from their
//  headers alone (their checksums are checked as they are read).
int64_t drv_wal_count_records(const drv_wal_t *self, const segment_t *segment);
//  Reads exactly len bytes at offset: 1, 0 at the end of the file (or short), -1 on error.
int drv_wal_pread(int fd, void *buf, size_t len, int64_t offset);
void drv_wal_put32(unsigned char *p, uint32_t v);
void drv_wal_put64(unsigned char *p, uint64_t v);

#endif
