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

//  Input numbers past this are damage (a log numbers one by one from 1:
//  no instance lives to reach it); the next number never overflows.
#define DRV_WAL_MAX_NUMBER (INT64_C(1) << 62)
#define NAME_MAX_LEN 32
#define MARK_NAME "settled"   // the settled mark (drv_wal_mark.c)
#define SPARE_PREFIX "spare-" // a recycled segment waiting to be written over: spare-{serial:06}.log
#define SPARES_KEPT 4         // more than these are deleted (off the loop when a sync thread runs)
#define SPARES_IDLE_MS 60000  // spares untouched this long are deleted but one

typedef struct {
    int64_t first, last; // input numbers it holds (last: the next one's first - 1 until read)
    int64_t bytes;       // of whole entries from its start (the newest is checked at open, the others as read)
    int64_t records, read_records; // in it (by its headers, at open), and read so far
    int64_t settled_bytes;         // at its start, settled but kept (the segment appended to): not in self->bytes
    bool old_format;               // {first:020}.wal, written before recycling: read to its file's end
    char name[NAME_MAX_LEN];       // in the log's directory: {first:020}.log (or .wal)
    char path[4096];               // the same, whole, for messages
} segment_t;

typedef char drv_wal_name_t[NAME_MAX_LEN];

struct drv_wal_t {
    char dir[4096];
    char quarantine[4096];
    int dir_fd;
    int quarantine_fd; // opened when first needed (-1: not yet, -2: cannot be)
    char notes[512];   // what was set aside at open, for the owner to log
    size_t segment_bytes;
    segment_t *segments; // oldest first; the newest is the one appended to
    size_t count, cap;
    int fd;         // the newest segment, open for writing at segments[count-1].bytes (-1: none yet)
    int ended_fd;   // the segment appended to before it, until a sync covered it (-1: none)
    bool dirty;     // appended since the last sync
    bool dir_dirty; // a segment was created since
    //  Spares: settled segments kept to be written over (drv_wal_spare.c).
    drv_wal_name_t *spares, *doomed; // kept; to delete (by the next sync job when deletes are deferred)
    size_t spare_count, spare_cap, doomed_count, doomed_cap;
    int64_t spare_serial;       // the next spare's name
    bool defer_deletes;         // a sync thread deletes (drv_wal_sync_start hands them over)
    bool never_synced;          // nothing syncs it (sync: none): a full segment is closed, not left to a sync
    bool preparing;             // a sync job is making a spare ahead of need
    bool spare_used;            // a spare was taken or returned since the last tick
    int64_t spares_quiet_since; // mono ms (0: not yet ticked)
    //  The settled mark (drv_wal_mark.c): inputs up to mark are settled.
    int mark_fd;
    int64_t mark, mark_seq, mark_synced_ms;
    bool mark_dirty;
    int64_t read_last; // the newest input read (handed out, or fed at once): the mark never passes it
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
//  A segment found at open joins the list (oldest first is sorted after).
int drv_wal_push(drv_wal_t *self, const segment_t *segment);
//  The records of the entries numbered past after in an old format segment, from their
//  headers alone (their checksums are checked as they are read).
int64_t drv_wal_count_records(const drv_wal_t *self, const segment_t *segment, int64_t after);
//  Syncs and closes the segment a full one was left by (ended_fd), if any
//  (drv_wal_sync.c). 0, or -1 with err.
int drv_wal_sync_ended(drv_wal_t *self, char *err, size_t errlen);

//  Spares (drv_wal_spare.c). At open: a spare found (by name, or a segment
//  whose entries do not start at its name's number) joins the kept ones, and
//  numbering goes on above the entries it holds.
void drv_wal_spare_found(drv_wal_t *self, const char *name);
//  A settled segment leaves the log: renamed a spare, or deleted past SPARES_KEPT.
void drv_wal_spare_return(drv_wal_t *self, const segment_t *segment);
//  The file for a new segment named name: a spare renamed, or a new file
//  made at full size. Its descriptor open for writing, or -1 with errno.
int drv_wal_spare_take(drv_wal_t *self, const char *name);

//  The settled mark (drv_wal_mark.c): read at open (0 when none), written as settling goes on.
int drv_wal_mark_open(drv_wal_t *self, char *err, size_t errlen);
void drv_wal_mark_write(drv_wal_t *self, int64_t settled);

//  Reads exactly len bytes at offset: 1, 0 at the end of the file (or short), -1 on error.
int drv_wal_pread(int fd, void *buf, size_t len, int64_t offset);
//  A step a crash could come after (drv_wal_crash_hook).
#define DRV_WAL_STEP(name)                                                                                             \
    do {                                                                                                               \
        if (drv_wal_crash_hook) {                                                                                      \
            drv_wal_crash_hook(name);                                                                                  \
        }                                                                                                              \
    } while (0)
void drv_wal_put32(unsigned char *p, uint32_t v);
void drv_wal_put64(unsigned char *p, uint64_t v);

#endif
