/*  drv_tail — the files a receiver:file instance follows (docs/operations.md,
    "Reading files"): found by globs, each known by device, inode and a
    fingerprint of its first bytes, read from where its checkpoint
    (drv_checkpoint.h) says what was read is settled. A file is followed by
    one instance: of the newest generation's instances (drv_checkpoint_rank),
    the one its identity hashes to, and only while it holds the file's
    lock; a file that is no longer this instance's (a core added) is let go
    once what was read of it is settled. A file renamed away (no glob finds it any
    more) or deleted is read to its end, then let go; one renamed while
    nobody ran is found again in its directory by its identity; one cut
    shorter than what was read (copytruncate) or whose first bytes changed
    is read again from its start.

    Reading is peeking: lines are looked at in a file's buffer without
    being taken, and taken (drv_tail_take) once the records made of them
    were accepted, so that what the pipeline refuses is read again. What a
    file holds in memory is bounded by max_line_bytes plus a read's worth. */
#ifndef DRV_TAIL_H
#define DRV_TAIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const json_t *include, *exclude; // lists of globs
    bool start_at_beginning;         // files found at the pipeline's first start: from the beginning (else the end)
    size_t max_line_bytes;           // longer lines are cut (counted)
    int64_t generation;              // which instance this is (drv_checkpoint_join)
    int core;
    const char *checkpoint_dir;
} drv_tail_config_t;

typedef struct drv_tail_t drv_tail_t;

//  A followed file, as the receiver sees it.
typedef struct {
    const char *path, *name; // where it was last found, and its last component
    const char *origin;      // where it was first followed (what its pod is read from after a rotation)
    uint64_t dev, ino;
    uint32_t epoch;    // goes up when it is read again from its start (copytruncate)
    int64_t offset;    // of the first byte not taken
    bool at_end;       // the last read found nothing more
    bool full;         // its buffer is at its bound (max_line_bytes and a read): nothing more is peeked until taken
    bool quiet;        // all read and taken, and nothing heard of it since: a peek would find nothing
    bool gone;         // no glob finds it any more, or it was deleted: read to its end, then let go
    int64_t unsettled; // inputs the receiver made of it that are not settled (kept by the receiver)
    void *user;        // the receiver's own state for it (freed by forget)
} drv_tail_file_t;

//  A line peeked at: its bytes (without the newline) and where it ends in
//  the file (past its newline). cut: it was longer than max_line_bytes:
//  these are its first bytes, and end is past the rest.
typedef struct {
    const char *data;
    size_t len;
    int64_t end;
    bool cut;
} drv_tail_line_t;

//  NULL with err. forget is called with a file's user state when it is let go.
drv_tail_t *drv_tail_new(const drv_tail_config_t *config, void (*forget)(void *user), char *err, size_t errlen);
//  Saves where each file's settled reading stands and lets the files go.
void drv_tail_destroy(drv_tail_t **self_p);

//  Looks for files: the globs, then (the first time) checkpoints of files
//  renamed away while nobody read them. now_ms: mono. A scan begins to
//  follow a bounded number of files: true when it stopped short (scan
//  again at once).
bool drv_tail_scan(drv_tail_t *self, int64_t now_ms);
//  The files followed (for peeking), count in *n.
drv_tail_file_t **drv_tail_files(drv_tail_t *self, size_t *n);
//  Up to max lines of file from its first byte not taken, without taking
//  them (valid until the next call for that file, or take): how many.
//  Reads more from the file when its buffer has no whole line left, and
//  with more (the lines given last held nothing the caller could use: a
//  message not yet whole) before giving any, until the buffer is full.
//  The last line of a file gone is given whole though it has no newline.
//  What remains of a cut line is dropped a bounded stretch per call.
size_t drv_tail_peek(drv_tail_t *self, drv_tail_file_t *file, drv_tail_line_t *lines, size_t max, bool more);
//  What was peeked is taken up to end (a line's end), into an input.
void drv_tail_take(drv_tail_t *self, drv_tail_file_t *file, int64_t end);
//  What was peeked is dropped up to end, in no input (the rest of a
//  message cut): settled as soon as every input taken before it is.
void drv_tail_drop(drv_tail_t *self, drv_tail_file_t *file, int64_t end);
//  What was taken of file up to end, in epoch, is settled: its checkpoint
//  may say so. Called after file->unsettled counts it no more.
void drv_tail_settled(drv_tail_t *self, drv_tail_file_t *file, uint32_t epoch, int64_t end);
//  Saves the checkpoints that moved (a bounded number a call: true when
//  some are left, save again soon), and lets go of the files gone and
//  read to their end whose inputs are all settled. now_ms: mono.
bool drv_tail_save(drv_tail_t *self, int64_t now_ms);
//  A descriptor readable when something changed in the globs'
//  directories or those of the files followed (inotify), or -1; events
//  drains it, waking the quiet files written to: true when a file
//  appeared there (a scan is due).
int drv_tail_fd(const drv_tail_t *self);
bool drv_tail_events(drv_tail_t *self);

#endif
