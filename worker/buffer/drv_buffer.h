/*  drv_buffer — an instance's disk buffer (policies.buffer type: disk,
    docs/operations.md, disk buffers): its write-ahead log (drv_wal) used as the queue in front
    of the pipeline. Every input a receiver takes is appended before it is
    acknowledged; the pipeline reads the log in order (an input is fed at
    once when nothing waits before it and the pipeline can take it); the
    log forgets what every exporter has settled.

    Where: {buffer_dir}/{group}/{pipeline}/{core}.{slot}/, a slot being a
    log one instance holds (flock on its `lock` file). An instance takes
    the first slot of its core nobody holds: after a crash or a restart of
    droverd that is the log the last instance on the core left, which it
    reads first; during a replace the new generation takes the next slot
    while the old one drains its own. A slot nobody holds that still has
    entries is taken over by a running instance (drv_buffer_adopt.c). Damage
    goes to {buffer_dir}/quarantine/{group}/{pipeline}/{core}.{slot}/.

    An entry's payload: u8 length of the receiver's id, the id, u8 its form,
    then the input: records packed as msgpack (DRV_BUFFER_RECORDS), or the
    bytes the receiver took, which its kind reads back itself
    (DRV_BUFFER_RAW: an OTLP request as it came, decoded again on replay:
    no packing on the way in, fewer bytes on disk). The form's high bit
    (DRV_BUFFER_HAD) says a list follows it, of the exporters that had
    already settled the input when it was taken over from a log left behind
    (u8 count, then each id as u8 length and its bytes): they are not fed
    it again (drv_buffer_adopt.c, drv_buffer_positions.c). Every entry
    taken over has the list, maybe empty: it was counted where it was
    taken (worker/dag/drv_dag_counts.c). */
#ifndef DRV_BUFFER_H
#define DRV_BUFFER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

typedef struct drv_buffer_t drv_buffer_t;

typedef enum { DRV_BUFFER_SYNC_BATCH, DRV_BUFFER_SYNC_ALWAYS, DRV_BUFFER_SYNC_NONE } drv_buffer_sync_t;

typedef struct {
    int64_t max_bytes; // this instance's share of the pipeline's
    bool drop_oldest;  // when full: drop the oldest unread (else block: refuse)
    drv_buffer_sync_t sync;
    int64_t sync_interval_ms;
} drv_buffer_policy_t;

typedef struct {
    int64_t bytes;            // on disk
    int64_t records;          // taken and not settled (what was found at start: once read)
    int64_t oldest_ms;        // wall ms the oldest unsettled input was taken, or -1
    int64_t replayed;         // records read back that an earlier instance had taken
    int64_t dropped;          // records dropped when full (drop_oldest)
    int64_t corrupt_segments; // segments cut short at damage
    int64_t torn_bytes;       // cut off a crash's torn tail
    int64_t unkept_bytes;     // damaged bytes cut off with no room in quarantine for a copy
    int64_t odd_files;        // things named like segments that were no regular file, set aside
} drv_buffer_stats_t;

#define DRV_BUFFER_FULL 0 // drv_buffer_append: nothing appended, push back

enum { DRV_BUFFER_RECORDS = 0, DRV_BUFFER_RAW = 1, DRV_BUFFER_HAD = 0x80 };

//  An input, as appended and as read back.
typedef struct {
    const char *node;      // the receiver it entered at
    uint8_t form;          // DRV_BUFFER_RECORDS or DRV_BUFFER_RAW
    struct iovec parts[4]; // appending: its bytes in pieces
    int count;
    const void *data; // read back: its bytes (valid until the next read)
    size_t size;
    uint32_t records;
    int64_t number;     // read back: its number
    int64_t time_ms;    // wall ms: when it was taken (appending; 0: now), read back: when it was appended
    const uint8_t *had; // read back: the exporters that had it already (DRV_BUFFER_HAD's list), or NULL
    size_t had_size;
    bool replayed; // read back: an earlier instance took it (it was in the log at open)
} drv_buffer_input_t;

//  policies.buffer of a normalized spec: true when type is disk, policy
//  filled in with max_bytes split over shares instances.
bool drv_buffer_policy(const json_t *spec, int shares, drv_buffer_policy_t *policy);

//  Takes a slot for core under root and opens its log. NULL with err.
drv_buffer_t *drv_buffer_open(const char *root, const char *group, const char *pipeline, int core,
                              const drv_buffer_policy_t *policy, char *err, size_t errlen);
//  Syncs what was appended and lets the slot go (the log stays on disk).
void drv_buffer_close(drv_buffer_t **self_p);
//  The slot's directory.
const char *drv_buffer_dir(const drv_buffer_t *self);
//  The newest input's number (what was found at open, then appended).
int64_t drv_buffer_last(const drv_buffer_t *self);

//  Appends an input (node, form, parts, records): returns its number,
//  DRV_BUFFER_FULL, or -1 with err when the disk failed us (nothing
//  appended either). feed_now: the caller runs it through the pipeline at
//  once (only when nothing is unread: check drv_buffer_unread first).
int64_t drv_buffer_append(drv_buffer_t *self, const drv_buffer_input_t *input, bool feed_now, char *err, size_t errlen);
//  The next input waiting, oldest first: 1 with it in *input (node, form,
//  data, size, records, number; valid until the next call); 0 when none
//  waits; -1 with err.
int drv_buffer_next(drv_buffer_t *self, drv_buffer_input_t *input, char *err, size_t errlen);
bool drv_buffer_unread(const drv_buffer_t *self);
//  True while no more may be appended (block) or the disk refused the last append.
bool drv_buffer_full(const drv_buffer_t *self);
//  Every input up to upto is settled: what the log no longer needs goes.
void drv_buffer_settled(drv_buffer_t *self, int64_t upto);
//  True when every input taken is settled.
bool drv_buffer_empty(const drv_buffer_t *self);

//  Inputs up to the returned number are durable (as sync says).
int64_t drv_buffer_durable(const drv_buffer_t *self);
//  Syncs what is due at now_ms (drv_buffer_sync.c says when). 0, or -1 with err.
int drv_buffer_sync_if_due(drv_buffer_t *self, int64_t now_ms, char *err, size_t errlen);
//  A descriptor the loop polls (readable: a sync finished; call
//  drv_buffer_sync_if_due), or -1.
int drv_buffer_fd(const drv_buffer_t *self);
//  Milliseconds until something is due (a sync, a look for logs left behind).
int64_t drv_buffer_timeout_ms(const drv_buffer_t *self, int64_t now_ms);

void drv_buffer_stats(drv_buffer_t *self, drv_buffer_stats_t *stats);

//  Each exporter's own position (drv_buffer_positions.c). A reader reads
//  again, from input from on, what drv_buffer_next already passed: an
//  exporter catching up. next: 1 with *input (valid until the next call),
//  0 when none is left, -1 with err.
typedef struct drv_buffer_reader_t drv_buffer_reader_t;
drv_buffer_reader_t *drv_buffer_reader_open(drv_buffer_t *self, int64_t from);
int drv_buffer_reader_next(drv_buffer_reader_t *reader, drv_buffer_input_t *input, char *err, size_t errlen);
void drv_buffer_reader_close(drv_buffer_reader_t **reader_p);
//  Bytes the log holds from input number on: what an exporter standing
//  there has ahead of it.
int64_t drv_buffer_bytes_from(drv_buffer_t *self, int64_t number);
//  The first input of the segment after the one holding number, and the
//  records of the inputs from one number up to (not including) another.
int64_t drv_buffer_segment_after(const drv_buffer_t *self, int64_t number);
int64_t drv_buffer_records_between(drv_buffer_t *self, int64_t from, int64_t to);
//  The oldest input from from on such that what the log holds from it on
//  takes at most max_bytes, with the records of the inputs passed over.
int64_t drv_buffer_fit_from(drv_buffer_t *self, int64_t from, int64_t max_bytes, int64_t *records_skipped);
//  True when the buffer's when_full is drop_oldest.
bool drv_buffer_drops_oldest(const drv_buffer_t *self);
//  True when exporter id is in an input's list of those that had it already.
bool drv_buffer_had(const drv_buffer_input_t *input, const char *id);
//  An entry's head (its payload before the input's bytes) for input
//  (node, form, and the list it had, if any) with the count exporters of
//  had added to that list (a list, maybe empty, only when the input has
//  one or had is given): its length.
#define DRV_BUFFER_HEAD_MAX (2 + 255 + 1 + 255 * 256)
size_t drv_buffer_head(unsigned char *head, const drv_buffer_input_t *input, const char *const *had, size_t count);
//  Where each exporter stands, {id: settled up to}, kept in the slot's
//  `positions` file (replaced whole): save is 0, or -1 with err; load
//  gives {} when there is none or it is unreadable (said in the log).
int drv_buffer_positions_save(drv_buffer_t *self, const json_t *positions, char *err, size_t errlen);
json_t *drv_buffer_positions_load(drv_buffer_t *self);

#endif
