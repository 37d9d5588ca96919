/*  drv_buffer_internal — drv_buffer's state, shared by drv_buffer.c (its
    own log) and drv_buffer_adopt.c (logs left by instances that are gone).
    Private to worker/buffer/. */
#ifndef DRV_BUFFER_INTERNAL_H
#define DRV_BUFFER_INTERNAL_H

#include "drv_buffer.h"
#include "drv_wal.h"

#define MAX_SLOTS 64

typedef struct drv_buffer_syncer_t drv_buffer_syncer_t;

typedef struct {
    int64_t number;
    int64_t time_ms;
    uint32_t records;
} fed_t;

struct drv_buffer_t {
    drv_buffer_policy_t policy;
    char dir[4096];
    int lock_fd;
    drv_wal_t *wal;
    int64_t found_last;       // inputs up to this one were taken by an earlier instance
    int64_t durable;          // inputs up to this one are durable
    int64_t dirty_since_ms;   // mono ms of the first append not synced, or -1
    bool refused;             // the disk refused an append (full), and nothing went since
    int64_t refused_at_bytes; // the log's bytes then
    int64_t refused_ms;       // mono: and when
    //  Inputs read (or fed at once) and not yet settled, oldest first: what
    //  they hold is counted in records until they settle.
    fed_t *fed;
    size_t fed_head, fed_count, fed_cap;
    int64_t settled;
    int64_t records;
    int64_t replayed, dropped;
    int64_t corrupt_told;         // damaged segments already logged
    int64_t corrupt_records_told; // and the records lost with them, already taken off records
    int64_t unkept_told;          // damaged bytes cut without a copy, already logged
    int64_t dropped_warned_ms;    // mono: drops are logged at most every 5 s
    int64_t slow_warned_ms;       // mono: slow syncs are logged at most every 10 s
    char node[256];               // the receiver id of the entry last read
    //  Taking over logs nobody holds (drv_buffer_adopt.c).
    char root[4096], pipeline_dir[4096], group[128], pipeline[128];
    int core, slot;
    int64_t next_scan_ms; // mono
    char unheld[16][64];  // slots of other cores seen unheld at the last scan
    size_t unheld_count;
    drv_wal_t *adopted; // a log being copied into this one, or NULL
    int adopted_lock;
    char adopted_dir[4096];
    int64_t adopted_records;
    json_t *adopted_positions;   // where its exporters stood, {id: settled up to}
    drv_buffer_syncer_t *syncer; // sync: batch's thread (drv_buffer_sync.c), or NULL
};

//  An entry read back as an input (its receiver's id copied into node,
//  256 bytes): false when it is not one of ours.
bool drv_buffer_input_of(const drv_wal_entry_t *entry, char *node, drv_buffer_input_t *input);
//  The exporters' positions saved in the slot whose directory is open as
//  dir_fd ({} when none or unreadable, said in the log).
json_t *drv_buffer_positions_at(int dir_fd, const char *dir);
//  Deletes them (the log they were positions in is gone).
void drv_buffer_positions_forget(int dir_fd);
//  Appends an entry taken over from a log left behind, listing in it the
//  exporters whose position there (positions, {id: settled up to}) says
//  they had it already (the list, maybe empty, also says it was taken
//  elsewhere: counted there). Its number, or -1 with err.
int64_t drv_buffer_append_had(drv_wal_t *wal, const drv_wal_entry_t *entry, const json_t *positions, char *err,
                              size_t errlen);
//  Opens dir/lock and takes it without waiting: the descriptor, or
//  DRV_BUFFER_LOCK_HELD (another holds it) or DRV_BUFFER_LOCK_REFUSED (the
//  slot or its lock is not what it should be, or cannot be opened: why in
//  err when err is given).
#define DRV_BUFFER_LOCK_HELD (-1)
#define DRV_BUFFER_LOCK_REFUSED (-2)
int drv_buffer_lock(const char *dir, char *err, size_t errlen);
//  Where the damage of the slot in dir goes: {root}/quarantine/{group}/{pipeline}/{slot}.
void drv_buffer_quarantine_of(const drv_buffer_t *self, const char *dir, char *out, size_t size);
//  sync: batch's thread (drv_buffer_sync.c): started at open, stopped (its
//  last job finished) at close. 0, or -1 with err.
int drv_buffer_syncer_start(drv_buffer_t *self, char *err, size_t errlen);
void drv_buffer_syncer_stop(drv_buffer_t *self);
//  Looks for logs to take over, and copies a slice of the one being taken
//  over (drv_buffer_adopt.c). Called every loop turn.
void drv_buffer_adopt_tick(drv_buffer_t *self, int64_t now_ms);
//  Lets a log being taken over go unfinished (it stays on disk, whole).
void drv_buffer_adopt_abandon(drv_buffer_t *self);

#endif
