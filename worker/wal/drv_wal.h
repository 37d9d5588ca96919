/*  drv_wal — one instance's write-ahead log of its inputs (docs/operations.md, disk buffers,
    issue 25), kept as a queue: what a receiver took is appended (and
    numbered) before it is acknowledged, made durable by drv_wal_sync
    (fdatasync, once for everything appended since), read back in order
    when the pipeline can take it (drv_wal_next), and let go segment by
    segment once every input in a segment is settled.

    On disk (docs/operations.md, "The log on disk"): a directory of segment
    files `{first input:020}.log`, each a sequence of entries
        u32 length of the payload (little-endian, as every field)
        u32 CRC32C of the next 20 + length bytes
        u64 the input's number (one more than the entry before)
        u64 when it was appended (wall clock, ms)
        u32 records it holds
        payload
    A new segment starts when the current one passes segment_bytes. Segments
    are recycled (drv_wal_spare.c): made at full size, and once settled
    renamed `spare-N.log` and later written over as the next segment, so a
    segment's entries end where the numbers stop following on from its name
    (past them lie a spare's older entries, numbered lower). The segment
    appended to is kept when everything in it is settled; the `settled` file
    (drv_wal_mark.c) says up to which input, so that a restart does not read
    it again. Segments of the format before recycling (`.wal`: ended by
    their file's end) are read once and recycled.

    Opening lists what is there, walks the headers of the older segments and
    checks the newest whole: a torn write (the entry numbered next, not
    whole: a crash mid-write) is cut off. Older segments are checked as they
    are read back: an entry whose checksum fails, or one cut short, ends its
    segment there. Either way the bytes cut off are kept in the quarantine
    directory, never discarded unseen, and counted (drv_wal_damage) — kept
    when quarantine has room for them; the log is cut either way, so damage
    never keeps a full disk from starting. Files are opened relative to the
    directory, never through a link, and only when regular: anything else
    named like a segment is set aside (docs/security.md). Reading holds one
    entry in memory at a time: memory does not grow with the log. This
    module knows nothing of pipelines: the instance decides what an input is
    and when it is settled. */
#ifndef DRV_WAL_H
#define DRV_WAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

typedef struct drv_wal_t drv_wal_t;

typedef struct {
    int64_t number;
    int64_t time_ms;
    uint32_t records;
    const void *data; // valid until the next drv_wal_next
    size_t len;
} drv_wal_entry_t;

typedef struct {
    int64_t torn_bytes;       // cut off the end of the newest segment at open (a crash mid-write)
    int64_t corrupt_segments; // segments cut short at a bad checksum or a cut in the middle of the log
    int64_t corrupt_bytes;    // what those cuts moved into quarantine
    int64_t corrupt_records;  // records their headers said were there, lost to replay
    int64_t unkept_bytes;     // damaged bytes cut off that quarantine had no room (or no place) for
    int64_t odd_files;        // things named like segments that were no regular file: set aside, never opened
} drv_wal_damage_t;

//  CRC32C (Castagnoli), continuing from crc (0 to start). There is no
//  Debian C library for it (zlib's crc32 is another polynomial).
uint32_t drv_crc32c(uint32_t crc, const void *data, size_t len);

//  Opens (creating) the log in dir; damaged bytes go to quarantine_dir
//  (created when first needed). NULL with the reason in err.
drv_wal_t *drv_wal_open(const char *dir, const char *quarantine_dir, size_t segment_bytes, char *err, size_t errlen);
void drv_wal_close(drv_wal_t **self_p);

//  Appends an input: returns its number, or -1 with err (the disk is full,
//  ...): the input must then not be acknowledged. read: the caller feeds it
//  now, so reading moves past it; only when nothing was left unread.
int64_t drv_wal_append(drv_wal_t *self, int64_t time_ms, uint32_t records, const void *data, size_t len, bool read,
                       char *err, size_t errlen);
//  The same for a payload in pieces (at most DRV_WAL_MAX_PIECES), written as one entry.
#define DRV_WAL_MAX_PIECES 6
int64_t drv_wal_appendv(drv_wal_t *self, int64_t time_ms, uint32_t records, const struct iovec *pieces, int count,
                        bool read, char *err, size_t errlen);
//  Makes every append so far durable. 0, or -1 with err.
int drv_wal_sync(drv_wal_t *self, char *err, size_t errlen);
//  The same in two steps, so that the waiting can happen on another thread
//  while appends go on (group commit, drv_wal_sync.c): start takes what a
//  sync must cover now (the descriptors are duplicates: the log may close
//  its own meanwhile) and counts it clean; run (any thread) syncs them and
//  makes a spare segment ahead of need when start asked for one; release
//  deletes the spares handed over and closes the descriptors, once the
//  outcome was told (the last close of a deleted file frees its blocks,
//  which no answer should wait for: B17); finished (the log's thread) takes
//  the outcome back: a failed run leaves the log dirty.
typedef struct {
    int fd, ended_fd, dir_fd, mark_fd; // -1: nothing to sync there
    bool dir_sync;                     // dir_fd is synced (it is also where spares are made and deleted)
    int64_t last;                      // inputs up to this one are durable once it ran
    char (*doomed)[32];                // spares to delete, doomed_count of them (the job's own)
    size_t doomed_count;
    char prepare[32]; // a spare to make at full size ahead of need ("" none)
    int64_t prepare_bytes;
    bool prepared; // run made it
} drv_wal_sync_job_t;
void drv_wal_sync_start(drv_wal_t *self, drv_wal_sync_job_t *job);
//  True when start found nothing for a job to do.
bool drv_wal_sync_empty(const drv_wal_sync_job_t *job);
int drv_wal_sync_run(drv_wal_sync_job_t *job, char *err, size_t errlen);
void drv_wal_sync_release(drv_wal_sync_job_t *job);
void drv_wal_sync_finished(drv_wal_t *self, const drv_wal_sync_job_t *job, bool ok);
//  Spares past those kept are deleted by sync jobs, not at once (a thread runs them).
void drv_wal_defer_deletes(drv_wal_t *self);
//  Nothing syncs this log (policies.buffer sync: none): a full segment is
//  closed as it ends, not left for a sync that would otherwise come at the
//  next segment's end, on the loop.
void drv_wal_never_synced(drv_wal_t *self);
//  Called now and then (every turn of the instance's loop will do): spares
//  nobody took or returned for a minute are let go, but one (docs/operations.md,
//  "The log on disk"); by the next sync job when deletes are deferred.
void drv_wal_tick(drv_wal_t *self, int64_t now_ms);
//  True while a sync job has something to do though nothing was appended
//  (spares to delete, the settled mark to sync, a full segment to sync).
bool drv_wal_chores(const drv_wal_t *self);
//  True while an append has not been synced.
bool drv_wal_dirty(const drv_wal_t *self);

//  The next entry not yet read, oldest first: 1 with entry, 0 when none is
//  left, -1 with err when the disk fails us.
int drv_wal_next(drv_wal_t *self, drv_wal_entry_t *entry, char *err, size_t errlen);
//  True while entries are left to read.
bool drv_wal_unread(const drv_wal_t *self);
//  When the next entry to read was appended (wall ms), or -1 when none is left.
int64_t drv_wal_unread_since(drv_wal_t *self);

//  A second reading, of what drv_wal_next passed: entries from number from
//  on, oldest first (drv_wal_reader.c). next: 1 with entry (valid until the
//  next call), 0 when none is left (more may come), -1 with err.
typedef struct drv_wal_reader_t drv_wal_reader_t;
drv_wal_reader_t *drv_wal_reader_open(drv_wal_t *self, int64_t from);
int drv_wal_reader_next(drv_wal_reader_t *reader, drv_wal_entry_t *entry, char *err, size_t errlen);
void drv_wal_reader_close(drv_wal_reader_t **reader_p);
//  Bytes of the entries from input number to the newest.
int64_t drv_wal_bytes_from(drv_wal_t *self, int64_t number);
//  The first number of the segment after the one holding number (the next
//  input's number when that is the newest).
int64_t drv_wal_segment_after(const drv_wal_t *self, int64_t number);
//  The oldest input from from on such that the entries from it to the
//  newest take at most max_bytes, with the records of the inputs passed over.
int64_t drv_wal_fit_from(drv_wal_t *self, int64_t from, int64_t max_bytes, int64_t *records_skipped);
//  Records of the inputs numbered from up to (not including) to, from their headers.
int64_t drv_wal_records_between(drv_wal_t *self, int64_t from, int64_t to);
//  The log's directory, open (files beside the segments are opened relative to it).
int drv_wal_dir_fd(const drv_wal_t *self);

//  Every input up to upto is settled (it was read): segments holding
//  nothing newer become spares (the one appended to stays, written on), and
//  the settled mark says so.
void drv_wal_settled(drv_wal_t *self, int64_t upto);

//  Lets go of the oldest segment nothing has been read from (never the one
//  appended to): returns how many records it held, or -1 when there is
//  none such. Its inputs are never read (a full log dropping its oldest).
int64_t drv_wal_drop_oldest_unread(drv_wal_t *self);

//  The number of the newest input (0: none ever).
int64_t drv_wal_last(const drv_wal_t *self);
//  Records in what was found at open (from the entries' headers).
int64_t drv_wal_found_records(const drv_wal_t *self);
//  Bytes of the entries not yet settled (not counted: spares, and what is
//  settled in the segment appended to).
int64_t drv_wal_bytes(const drv_wal_t *self);
//  What damage was found so far.
drv_wal_damage_t drv_wal_damage(const drv_wal_t *self);
//  What opening found in the directory that was not a segment and was set
//  aside (names and where they went), "" when nothing: for the owner to log.
const char *drv_wal_notes(const drv_wal_t *self);

//  Tests only: called at each step of appending, syncing and settling
//  that a crash could come between (tests/unit/test_wal_recovery.c kills
//  the process at each); NULL otherwise.
extern void (*drv_wal_crash_hook)(const char *step);

#endif
