/*  drv_wal_sync — making the log durable (drv_wal.h): on the loop
    (drv_wal_sync), or as a job a thread runs while appends go on (group
    commit: one fdatasync covers every append before it started).

    A job syncs the segment a full one was left by (ended_fd), the one
    appended to, and the directory only when a segment was made or a spare
    renamed into the log (dir_dirty): a spare going back to the spares
    needs no sync (lost in a crash, it comes back as a settled segment,
    which opening makes a spare again). The settled mark is synced at most
    every second (drv_wal_mark.c). Ahead of need, a job makes a spare at
    full size when there is none and the segment appended to is half full;
    after the answers it deletes the spares past SPARES_KEPT, whose last
    close frees their blocks. */
#include "drv_wal_internal.h"

#include "drover/drv_time.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MARK_SYNC_MS 1000

static bool s_mark_due(const drv_wal_t *self)
{
    return self->mark_dirty && self->mark_fd >= 0 && drv_time_mono_ms() - self->mark_synced_ms >= MARK_SYNC_MS;
}

int drv_wal_sync_ended(drv_wal_t *self, char *err, size_t errlen)
{
    if (self->ended_fd < 0) {
        return 0;
    }
    int rc = fdatasync(self->ended_fd);
    close(self->ended_fd);
    self->ended_fd = -1;
    DRV_WAL_STEP("ended synced");
    if (rc != 0) {
        snprintf(err, errlen, "cannot sync a segment of %s: %s", self->dir, strerror(errno));
        return -1;
    }
    return 0;
}

int drv_wal_sync(drv_wal_t *self, char *err, size_t errlen)
{
    if (drv_wal_sync_ended(self, err, errlen) != 0) {
        return -1;
    }
    if (self->dirty && self->fd >= 0 && fdatasync(self->fd) != 0) {
        snprintf(err, errlen, "cannot sync %s: %s", self->segments[self->count - 1].path, strerror(errno));
        return -1;
    }
    self->dirty = false;
    if (self->dir_dirty && self->dir_fd >= 0 && fsync(self->dir_fd) != 0) {
        snprintf(err, errlen, "cannot sync %s: %s", self->dir, strerror(errno));
        return -1;
    }
    self->dir_dirty = false;
    DRV_WAL_STEP("synced");
    if (s_mark_due(self) && fdatasync(self->mark_fd) == 0) {
        self->mark_dirty = false;
        self->mark_synced_ms = drv_time_mono_ms();
    }
    return 0;
}

void drv_wal_defer_deletes(drv_wal_t *self)
{
    self->defer_deletes = true;
}

void drv_wal_never_synced(drv_wal_t *self)
{
    self->never_synced = true;
}

bool drv_wal_chores(const drv_wal_t *self)
{
    return self->doomed_count > 0 || s_mark_due(self) || self->ended_fd >= 0;
}

void drv_wal_sync_start(drv_wal_t *self, drv_wal_sync_job_t *job)
{
    *job = (drv_wal_sync_job_t){.fd = -1, .ended_fd = -1, .dir_fd = -1, .mark_fd = -1, .last = self->last};
    job->fd = self->dirty && self->fd >= 0 ? fcntl(self->fd, F_DUPFD_CLOEXEC, 0) : -1;
    self->dirty = self->dirty && job->fd < 0 && self->fd >= 0; // a dup that failed stays to do
    job->ended_fd = self->ended_fd;                            // the job's now: nothing appends there any more
    self->ended_fd = -1;
    if (s_mark_due(self)) {
        job->mark_fd = fcntl(self->mark_fd, F_DUPFD_CLOEXEC, 0);
        self->mark_dirty = job->mark_fd < 0;
        self->mark_synced_ms = drv_time_mono_ms();
    }
    const segment_t *current = self->fd >= 0 ? &self->segments[self->count - 1] : NULL;
    if (self->defer_deletes && self->spare_count == 0 && !self->preparing && current &&
        current->bytes >= (int64_t)self->segment_bytes / 2) {
        snprintf(job->prepare, sizeof job->prepare, SPARE_PREFIX "%06" PRId64 ".log", self->spare_serial++);
        job->prepare_bytes = (int64_t)self->segment_bytes;
        self->preparing = true;
    }
    job->doomed = self->doomed;
    job->doomed_count = self->doomed_count;
    self->doomed = NULL;
    self->doomed_count = self->doomed_cap = 0;
    job->dir_sync = self->dir_dirty;
    if (job->dir_sync || job->doomed_count || job->prepare[0]) {
        job->dir_fd = self->dir_fd >= 0 ? fcntl(self->dir_fd, F_DUPFD_CLOEXEC, 0) : -1;
        job->dir_sync = job->dir_sync && job->dir_fd >= 0;
        self->dir_dirty = self->dir_dirty && !job->dir_sync;
    }
    if (job->dir_fd < 0 && (job->doomed_count || job->prepare[0])) { // no descriptor to do them with: later
        self->doomed = job->doomed;
        self->doomed_count = self->doomed_cap = job->doomed_count;
        job->doomed = NULL;
        job->doomed_count = 0;
        job->prepare[0] = '\0';
        self->preparing = false;
    }
}

bool drv_wal_sync_empty(const drv_wal_sync_job_t *job)
{
    return job->fd < 0 && job->ended_fd < 0 && job->dir_fd < 0 && job->mark_fd < 0;
}

int drv_wal_sync_run(drv_wal_sync_job_t *job, char *err, size_t errlen)
{
    int rc = 0;
    if (job->ended_fd >= 0 && fdatasync(job->ended_fd) != 0) {
        snprintf(err, errlen, "cannot sync the log: %s", strerror(errno));
        rc = -1;
    }
    if (rc == 0 && job->fd >= 0 && fdatasync(job->fd) != 0) {
        snprintf(err, errlen, "cannot sync the log: %s", strerror(errno));
        rc = -1;
    }
    if (rc == 0 && job->dir_sync && fsync(job->dir_fd) != 0) {
        snprintf(err, errlen, "cannot sync the log's directory: %s", strerror(errno));
        rc = -1;
    }
    if (job->mark_fd >= 0 && fdatasync(job->mark_fd) != 0) {
        //  An older mark on disk costs duplicates after a power cut, nothing more.
    }
    if (job->prepare[0] && job->dir_fd >= 0) {
        int fd = openat(job->dir_fd, job->prepare, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        job->prepared = fd >= 0 && (fallocate(fd, 0, 0, (off_t)job->prepare_bytes) == 0 || errno == EOPNOTSUPP);
        if (fd >= 0) {
            close(fd);
            if (!job->prepared) {
                unlinkat(job->dir_fd, job->prepare, 0);
            }
        }
    }
    return rc;
}

void drv_wal_sync_release(drv_wal_sync_job_t *job)
{
    for (size_t i = 0; i < job->doomed_count && job->dir_fd >= 0; i++) {
        unlinkat(job->dir_fd, job->doomed[i], 0);
    }
    free(job->doomed);
    job->doomed = NULL;
    job->doomed_count = 0;
    int *fds[] = {&job->fd, &job->ended_fd, &job->dir_fd, &job->mark_fd};
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++) {
        if (*fds[i] >= 0) {
            close(*fds[i]);
        }
        *fds[i] = -1;
    }
}

void drv_wal_sync_finished(drv_wal_t *self, const drv_wal_sync_job_t *job, bool ok)
{
    if (job->prepare[0]) {
        self->preparing = false;
        if (job->prepared) {
            drv_wal_spare_found(self, job->prepare);
        }
    }
    if (!ok) {
        self->dirty = self->fd >= 0;
        self->dir_dirty = true;
    }
}

bool drv_wal_dirty(const drv_wal_t *self)
{
    return self->dirty || self->dir_dirty || self->ended_fd >= 0;
}
