/*  drv_wal — see drv_wal.h. This file: appending, syncing and settling
    (drv_wal_read.c reads what was there at open). Segments are kept oldest
    first; the newest is the one appended to. Segments found at open are
    never appended to: new input starts a segment of its own. */
#include "drv_wal_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

void drv_wal_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

void drv_wal_put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

int drv_wal_push(segment_t **list, size_t *count, size_t *cap, const segment_t *segment)
{
    if (*count == *cap) {
        size_t grown_cap = *cap ? 2 * *cap : 8;
        segment_t *grown = realloc(*list, grown_cap * sizeof *grown);
        if (!grown) {
            return -1;
        }
        *list = grown;
        *cap = grown_cap;
    }
    (*list)[(*count)++] = *segment;
    return 0;
}

//  ---------------------------------------------------------------- appending

static int s_start_segment(drv_wal_t *self, int64_t first, char *err, size_t errlen)
{
    segment_t segment = {.first = first, .last = first - 1};
    snprintf(segment.path, sizeof segment.path, "%s/%020" PRId64 ".wal", self->dir, first);
    int fd = open(segment.path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || drv_wal_push(&self->segments, &self->count, &self->cap, &segment) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", segment.path, strerror(fd < 0 ? errno : ENOMEM));
        if (fd >= 0) {
            close(fd);
            unlink(segment.path);
        }
        return -1;
    }
    self->fd = fd;
    self->dir_dirty = true;
    return 0;
}

//  Closes the segment appended to (synced first if need be).
static int s_end_segment(drv_wal_t *self, char *err, size_t errlen)
{
    int rc = self->dirty ? drv_wal_sync(self, err, errlen) : 0;
    close(self->fd);
    self->fd = -1;
    return rc;
}

int drv_wal_append(drv_wal_t *self, int64_t number, const void *data, size_t len, char *err, size_t errlen)
{
    if (len > MAX_ENTRY) {
        snprintf(err, errlen, "an input of %zu bytes is larger than a log entry may be", len);
        return -1;
    }
    segment_t *current = self->fd >= 0 ? &self->segments[self->count - 1] : NULL;
    if (current && current->bytes >= (int64_t)self->segment_bytes) {
        if (s_end_segment(self, err, errlen) != 0) {
            return -1;
        }
        current = NULL;
    }
    if (!current) {
        if (s_start_segment(self, number, err, errlen) != 0) {
            return -1;
        }
        current = &self->segments[self->count - 1];
    }
    unsigned char head[HEADER];
    drv_wal_put32(head, (uint32_t)len);
    drv_wal_put64(head + 8, (uint64_t)number);
    drv_wal_put32(head + 4, drv_crc32c(drv_crc32c(0, head + 8, 8), data, len));
    struct iovec iov[2] = {{head, HEADER}, {(void *)data, len}};
    size_t want = HEADER + len, done = 0;
    while (done < want) {
        ssize_t n = writev(self->fd, iov, 2);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            snprintf(err, errlen, "cannot write %s: %s", current->path, n < 0 ? strerror(errno) : "no progress");
            //  No half entry is left behind: the log stays a sequence of whole ones.
            if (ftruncate(self->fd, (off_t)current->bytes) != 0) {
                snprintf(err, errlen, "cannot write %s, nor cut the half entry: %s", current->path, strerror(errno));
            }
            return -1;
        }
        done += (size_t)n;
        for (int i = 0; i < 2 && n > 0; i++) { // a short write: move past what went out
            size_t step = (size_t)n < iov[i].iov_len ? (size_t)n : iov[i].iov_len;
            iov[i].iov_base = (char *)iov[i].iov_base + step;
            iov[i].iov_len -= step;
            n -= (ssize_t)step;
        }
    }
    current->bytes += (int64_t)want;
    current->last = number;
    self->bytes += (int64_t)want;
    self->dirty = true;
    return 0;
}

int drv_wal_sync(drv_wal_t *self, char *err, size_t errlen)
{
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
    return 0;
}

void drv_wal_settled(drv_wal_t *self, int64_t upto)
{
    size_t kept = 0;
    for (size_t i = 0; i < self->count; i++) {
        segment_t *segment = &self->segments[i];
        bool appending = self->fd >= 0 && i == self->count - 1;
        if (segment->last <= upto && !(appending && self->dirty)) {
            if (appending) {
                close(self->fd); // the next input starts a new one
                self->fd = -1;
            }
            unlink(segment->path);
            self->bytes -= segment->bytes;
            self->dir_dirty = true;
        } else {
            self->segments[kept++] = *segment;
        }
    }
    self->count = kept;
}

int64_t drv_wal_last_found(const drv_wal_t *self)
{
    return self->last_found;
}

int64_t drv_wal_bytes(const drv_wal_t *self)
{
    return self->bytes;
}

bool drv_wal_dirty(const drv_wal_t *self)
{
    return self->dirty || self->dir_dirty;
}
