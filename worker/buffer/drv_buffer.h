/*  drv_buffer — an instance's disk buffer (policies.buffer type: disk,
    contract 7.1): its write-ahead log (drv_wal) used as the queue in front
    of the pipeline. Every input a receiver takes is appended before it is
    acknowledged; the pipeline reads the log in order (an input is fed at
    once when nothing waits before it and the pipeline can take it); the
    log forgets what every exporter has settled.

    Where: {buffer_dir}/{group}/{pipeline}/{core}.{slot}/, a slot being a
    log one instance holds (flock on its `lock` file). An instance takes
    the first slot of its core nobody holds: after a crash or a restart of
    droverd that is the log the last instance on the core left, which it
    reads first; during a replace the new generation takes the next slot
    while the old one drains its own. Damage goes to
    {buffer_dir}/quarantine/{group}/{pipeline}/{core}.{slot}/.

    An entry's payload: u8 length of the receiver's id, the id, then the
    records as one msgpack array. */
#ifndef DRV_BUFFER_H
#define DRV_BUFFER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct drv_buffer_t drv_buffer_t;

typedef enum { DRV_BUFFER_SYNC_BATCH, DRV_BUFFER_SYNC_ALWAYS, DRV_BUFFER_SYNC_NONE } drv_buffer_sync_t;

typedef struct {
    int64_t max_bytes;        // this instance's share of the pipeline's
    bool drop_oldest;         // when full: drop the oldest unread (else block: refuse)
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
} drv_buffer_stats_t;

#define DRV_BUFFER_FULL 0     // drv_buffer_append: nothing appended, push back

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

//  Appends records (packed: a msgpack array of records maps) that entered
//  at receiver node: returns the input's number, DRV_BUFFER_FULL, or -1
//  with err when the disk failed us (nothing appended either). feed_now:
//  the caller runs them through the pipeline at once (only when nothing
//  is unread: check drv_buffer_unread first).
int64_t drv_buffer_append(drv_buffer_t *self, const char *node, const void *packed, size_t size, uint32_t records,
                          bool feed_now, char *err, size_t errlen);
//  The next input waiting, oldest first: 1 with its receiver's id (NUL
//  terminated, valid until the next call), the packed records and its
//  number; 0 when none waits; -1 with err.
int drv_buffer_next(drv_buffer_t *self, const char **node, const void **packed, size_t *size, int64_t *number,
                    char *err, size_t errlen);
bool drv_buffer_unread(const drv_buffer_t *self);
//  True while no more may be appended (block) or the disk refused the last append.
bool drv_buffer_full(const drv_buffer_t *self);
//  Every input up to upto is settled: what the log no longer needs goes.
void drv_buffer_settled(drv_buffer_t *self, int64_t upto);
//  True when every input taken is settled.
bool drv_buffer_empty(const drv_buffer_t *self);

//  Inputs up to the returned number are durable (as sync says).
int64_t drv_buffer_durable(const drv_buffer_t *self);
//  Syncs when it is due at now_ms (sync: batch, an interval after the first
//  append not synced; always: whenever anything is). 0, or -1 with err.
int drv_buffer_sync_if_due(drv_buffer_t *self, int64_t now_ms, char *err, size_t errlen);
//  Milliseconds until a sync is due, or -1 when none is.
int64_t drv_buffer_timeout_ms(const drv_buffer_t *self, int64_t now_ms);

void drv_buffer_stats(drv_buffer_t *self, drv_buffer_stats_t *stats);

#endif
