/*  drv_rotate — exporter:file's rotation (docs/operations.md, "Writing
    files"): once the file holds rotate.max_bytes it is renamed aside as
    <path>.<UTC time, to the millisecond> and a new one is opened; with
    rotate.compress the file set aside is gzipped by a thread of its own
    (<name>.gz, the loop never waits for it); only the rotate.max_files
    newest files set aside are kept. It happens between two batches, never
    inside one, so no record is cut across files.

    Two instances appending to one path (the generations of a rolling
    replace, when the path has no {generation}) rotate it once, and no
    batch lands in a file set aside: a batch is written under a shared
    flock(2) of the file, after a look at whether the path still names it
    (else the path is opened again), and a rotation renames under an
    exclusive one, which the instance that finds the path still naming the
    file it writes does; the other opens the new one. */
#ifndef DRV_ROTATE_H
#define DRV_ROTATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DRV_ROTATE_DEFAULT_FILES 5

typedef struct {
    int64_t max_bytes; // 0: never rotated
    int64_t max_files;
    bool compress;
} drv_rotate_t;

//  config.rotate (a normalized exporter:file config) read; max_bytes 0
//  when there is none.
drv_rotate_t drv_rotate_config(const json_t *config);

//  Opens a path to append to: its descriptor, or -1 with the reason in why.
typedef int (*drv_rotate_open_fn)(const char *path, char *why, size_t whylen);

//  Before a batch is written: fd locked shared, or the file path names now
//  when another instance set fd's aside (fd closed, the new one locked).
//  drv_rotate_unlock once the batch is written.
int drv_rotate_lock(const char *path, int fd, drv_rotate_open_fn open_fn);
void drv_rotate_unlock(int fd);

//  The file at path, open as fd, rotated when it holds max_bytes: the
//  descriptor to write to from now on (fd, or the new file's: fd is then
//  closed). -1 with the reason in why when the new file cannot be opened
//  (fd is then still open and written to: nothing is lost).
int drv_rotate_check(const drv_rotate_t *rotate, const char *path, int fd, drv_rotate_open_fn open_fn, char *why,
                     size_t whylen);

#endif
