/*  drv_watched — a short-lived child the loop watches: what it writes is
    read into a buffer through a non-blocking pipe, it is killed at its
    deadline, and it is reaped with droverd's other children. It is over
    when both its exit and the end of its output are in. Instantiate's
    probe instances and the upgrade's check of a new droverd are such
    children (docs/architecture.md). */
#ifndef DRV_WATCHED_H
#define DRV_WATCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    pid_t pid;           // running while > 0; 0 once reaped
    int status;          // its wait status, once reaped
    int fd;              // its output, -1 once closed
    int64_t deadline_ms; // mono: killed past it
    bool killed;         // by us, at the deadline
    bool truncated;      // it wrote more than the buffer holds (the rest was read and dropped)
    char *out;           // what it wrote, NUL-terminated
    size_t len, cap;
} drv_watched_t;

//  Starts path with argv (drv_spawn_piped: stdin from stdin_fd, -1 for
//  droverd's; stderr too with with_stderr), keeping at most cap bytes of
//  its output, for at most timeout_ms. 0, or -1 with errno set (nothing
//  to free then).
int drv_watched_start(drv_watched_t *self, const char *path, char *const argv[], int stdin_fd, bool with_stderr,
                      size_t cap, int64_t timeout_ms);
//  Reads what is there to read; closes the pipe at its end.
void drv_watched_read(drv_watched_t *self);
//  Takes the exit of pid if it is this child's: true when it was.
bool drv_watched_reaped(drv_watched_t *self, pid_t pid, int status);
//  Past the deadline: stops reading the output (a grandchild could hold
//  the pipe open) and kills the child if it still runs. True when it
//  killed it.
bool drv_watched_expire(drv_watched_t *self, int64_t now);
//  Milliseconds left before the deadline (0 past it), -1 once killed or ended.
int64_t drv_watched_left_ms(const drv_watched_t *self, int64_t now);
//  Reaped and its output read to the end (or dropped at the deadline).
bool drv_watched_over(const drv_watched_t *self);
//  Kills it if it still runs (reaped with droverd's other children),
//  closes the pipe, frees the buffer.
void drv_watched_release(drv_watched_t *self);

#endif
