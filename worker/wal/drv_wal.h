/*  drv_wal — one instance's write-ahead log of its inputs (contract 7.1,
    issue 25): what a receiver took is appended before it is acknowledged,
    made durable by drv_wal_sync (fdatasync, once for everything appended
    since), and forgotten segment by segment once every input in a segment
    is settled.

    On disk: a directory of segment files `{first input:020}.wal`, each a
    sequence of entries
        u32 length of the payload (little-endian)
        u32 CRC32C of the next 8 + length bytes
        u64 the input's number
        payload
    appended only. A new segment starts when the current one passes
    segment_bytes.

    Opening reads what is there (to replay it): a torn tail (an entry cut
    short by a crash) is truncated away; a segment holding an entry whose
    checksum fails is moved into `quarantine/` under the directory (the
    entries before the bad one are still replayed); both are reported.
    Replay reads one entry at a time from disk: memory does not grow with
    the log. This module knows nothing of pipelines: the instance decides
    what an input is and when it is settled. */
#ifndef DRV_WAL_H
#define DRV_WAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct drv_wal_t drv_wal_t;

typedef struct {
    int64_t entries;          // intact entries found (to replay)
    int64_t torn_bytes;       // cut off the end of the last segment
    int64_t quarantined;      // segments moved aside for a bad checksum
    int64_t segments;         // segment files found
} drv_wal_found_t;

//  CRC32C (Castagnoli), continuing from crc (0 to start). There is no
//  Debian C library for it (zlib's crc32 is another polynomial).
uint32_t drv_crc32c(uint32_t crc, const void *data, size_t len);

//  Opens (creating) the log in dir and reads what it holds; NULL with the
//  reason in err. found says what was read.
drv_wal_t *drv_wal_open(const char *dir, size_t segment_bytes, drv_wal_found_t *found, char *err, size_t errlen);
void drv_wal_close(drv_wal_t **self_p);

//  The next entry left from before this open, oldest first: 1 with
//  *number, *data (valid until the next call) and *len; 0 when none is left;
//  -1 with err when reading fails.
int drv_wal_replay_next(drv_wal_t *self, int64_t *number, const void **data, size_t *len, char *err, size_t errlen);

//  Appends input number's payload (numbers increase). 0, or -1 with err
//  (the disk is full, ...): the input must then not be acknowledged.
int drv_wal_append(drv_wal_t *self, int64_t number, const void *data, size_t len, char *err, size_t errlen);
//  Makes every append so far durable. 0, or -1 with err.
int drv_wal_sync(drv_wal_t *self, char *err, size_t errlen);
//  Every input up to upto is settled: segments holding nothing newer are deleted.
void drv_wal_settled(drv_wal_t *self, int64_t upto);

//  The largest input number found at open (0: none): new inputs are
//  numbered after it, so that settling never confuses old and new.
int64_t drv_wal_last_found(const drv_wal_t *self);

//  Bytes of the segments on disk, and appends not yet synced.
int64_t drv_wal_bytes(const drv_wal_t *self);
bool drv_wal_dirty(const drv_wal_t *self);

#endif
