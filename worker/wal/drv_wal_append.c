/*  drv_wal_append — appending to the log and settling it (drv_wal.h). The
    segment appended to is written at its end with pwritev, over what a
    spare held before (drv_wal_spare.c); a full one is left for the next
    sync to cover (drv_wal_sync.c) and a new one begun. Settled segments
    become spares; the segment appended to is kept when everything in it is
    settled, the settled mark (drv_wal_mark.c) saying what of it a restart
    must not read again. */
#include "drv_wal_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static int s_start_segment(drv_wal_t *self, int64_t first, char *err, size_t errlen)
{
    segment_t segment = {.first = first, .last = first - 1};
    snprintf(segment.name, sizeof segment.name, "%020" PRId64 ".log", first);
    snprintf(segment.path, sizeof segment.path, "%s/%s", self->dir, segment.name);
    int fd = drv_wal_spare_take(self, segment.name);
    if (fd < 0 || drv_wal_push(self, &segment) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", segment.path, strerror(fd < 0 ? errno : ENOMEM));
        if (fd >= 0) {
            close(fd);
            unlinkat(self->dir_fd, segment.name, 0);
        }
        return -1;
    }
    self->fd = fd;
    DRV_WAL_STEP("segment taken");
    return 0;
}

//  The segment appended to is full: what in it is not synced yet is left to
//  the next sync (ended_fd), so that no sync waits on the loop here; one
//  left from before that no sync took yet is synced now. A log nothing
//  syncs closes it.
static int s_end_segment(drv_wal_t *self, char *err, size_t errlen)
{
    if (drv_wal_sync_ended(self, err, errlen) != 0) {
        close(self->fd);
        self->fd = -1;
        return -1;
    }
    if (self->dirty && !self->never_synced) {
        self->ended_fd = self->fd;
    } else {
        close(self->fd);
    }
    self->fd = -1;
    DRV_WAL_STEP("segment ended");
    return 0;
}

//  The disk is full and everything in the segment appended to is settled:
//  it is begun again from its start, as the next segment (its blocks are
//  the room there is). True when it was.
static bool s_start_over(drv_wal_t *self, int64_t first, char *err, size_t errlen)
{
    segment_t *current = &self->segments[self->count - 1];
    if (current->bytes == 0 || current->settled_bytes != current->bytes) {
        return false;
    }
    bool reading_it = self->read_index == self->count - 1;
    if (s_end_segment(self, err, errlen) != 0) {
        return false;
    }
    self->bytes -= current->bytes - current->settled_bytes;
    drv_wal_spare_return(self, current); // the newest spare: the one taken next
    self->count--;
    if (reading_it) {
        if (self->read_fd >= 0) {
            close(self->read_fd);
            self->read_fd = -1;
        }
        self->read_offset = 0; // the next segment is read from its start
    }
    return s_start_segment(self, first, err, errlen) == 0;
}

//  Writes iov[0..count) whole at the end of the current segment. What a
//  failed write left past the end is written over by the next entry (and
//  never read: it is not whole, or not numbered as the next).
static int s_write(drv_wal_t *self, segment_t *current, struct iovec *iov, int count, size_t want, char *err,
                   size_t errlen)
{
    size_t done = 0;
    int first = 0;
    while (done < want) {
        ssize_t n = pwritev(self->fd, iov + first, count - first, (off_t)(current->bytes + (int64_t)done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            snprintf(err, errlen, "cannot write %s: %s", current->path, n < 0 ? strerror(errno) : "no progress");
            return -1;
        }
        done += (size_t)n;
        while (n > 0 && first < count) { // a short write: move past what went out
            size_t step = (size_t)n < iov[first].iov_len ? (size_t)n : iov[first].iov_len;
            iov[first].iov_base = (char *)iov[first].iov_base + step;
            iov[first].iov_len -= step;
            n -= (ssize_t)step;
            first += iov[first].iov_len == 0;
        }
    }
    return 0;
}

int64_t drv_wal_append(drv_wal_t *self, int64_t time_ms, uint32_t records, const void *data, size_t len, bool read,
                       char *err, size_t errlen)
{
    struct iovec piece = {(void *)data, len};
    return drv_wal_appendv(self, time_ms, records, &piece, 1, read, err, errlen);
}

int64_t drv_wal_appendv(drv_wal_t *self, int64_t time_ms, uint32_t records, const struct iovec *pieces, int count,
                        bool read, char *err, size_t errlen)
{
    size_t len = 0;
    for (int i = 0; i < count; i++) {
        len += pieces[i].iov_len;
    }
    if (len > MAX_ENTRY || count > DRV_WAL_MAX_PIECES) {
        snprintf(err, errlen, "an input of %zu bytes is larger than a log entry may be", len);
        return -1;
    }
    if (self->last >= DRV_WAL_MAX_NUMBER) {
        snprintf(err, errlen, "%s: input numbers used up (a damaged log numbered its entries past %lld)", self->dir,
                 (long long)DRV_WAL_MAX_NUMBER);
        return -1;
    }
    read = read && !drv_wal_unread(self);
    segment_t *current = self->fd >= 0 ? &self->segments[self->count - 1] : NULL;
    if (current && current->bytes >= (int64_t)self->segment_bytes) {
        if (s_end_segment(self, err, errlen) != 0) {
            return -1;
        }
        current = NULL;
    }
    int64_t number = self->last + 1;
    if (!current) {
        if (s_start_segment(self, number, err, errlen) != 0) {
            return -1;
        }
        current = &self->segments[self->count - 1];
    }
    unsigned char head[HEADER];
    drv_wal_put32(head, (uint32_t)len);
    drv_wal_put64(head + 8, (uint64_t)number);
    drv_wal_put64(head + 16, (uint64_t)time_ms);
    drv_wal_put32(head + 24, records);
    uint32_t crc = drv_crc32c(0, head + 8, HEADER - 8);
    struct iovec iov[1 + DRV_WAL_MAX_PIECES] = {{head, HEADER}};
    for (int i = 0; i < count; i++) {
        crc = drv_crc32c(crc, pieces[i].iov_base, pieces[i].iov_len);
        iov[1 + i] = pieces[i];
    }
    drv_wal_put32(head + 4, crc);
    if (s_write(self, current, iov, 1 + count, HEADER + len, err, errlen) != 0) {
        if (errno != ENOSPC || !s_start_over(self, number, err, errlen)) {
            return -1;
        }
        current = &self->segments[self->count - 1];
        for (int i = 0; i < count; i++) { // s_write moved past what went out
            iov[1 + i] = pieces[i];
        }
        iov[0] = (struct iovec){head, HEADER};
        if (s_write(self, current, iov, 1 + count, HEADER + len, err, errlen) != 0) {
            return -1;
        }
    }
    DRV_WAL_STEP("entry written");
    current->bytes += (int64_t)(HEADER + len);
    current->records += records;
    current->last = number;
    self->last = number;
    self->bytes += (int64_t)(HEADER + len);
    self->dirty = true;
    if (read) {
        if (self->read_fd >= 0 && self->read_index != self->count - 1) {
            close(self->read_fd);
            self->read_fd = -1;
        }
        self->read_index = self->count - 1;
        self->read_offset = current->bytes;
        self->read_last = number;
    }
    return number;
}

//  ---------------------------------------------------------------- settling

void drv_wal_settled(drv_wal_t *self, int64_t upto)
{
    size_t kept = 0, gone_before = 0;
    bool read_gone = false;
    for (size_t i = 0; i < self->count; i++) {
        segment_t *segment = &self->segments[i];
        bool appending = self->fd >= 0 && i == self->count - 1;
        bool read = i < self->read_index || (i == self->read_index && self->read_offset >= segment->bytes);
        if (read && segment->last <= upto && appending) { // kept, written on; the mark covers what is in it
            self->bytes -= segment->bytes - segment->settled_bytes;
            segment->settled_bytes = segment->bytes;
        }
        if (read && segment->last <= upto && !appending) {
            if (i == self->read_index) {
                read_gone = true;
                if (self->read_fd >= 0) {
                    close(self->read_fd);
                    self->read_fd = -1;
                }
            } else {
                gone_before++;
            }
            self->bytes -= segment->bytes - segment->settled_bytes;
            drv_wal_spare_return(self, segment);
            DRV_WAL_STEP("segment returned");
        } else {
            self->segments[kept++] = *segment;
        }
    }
    self->count = kept;
    self->read_index -= gone_before;
    if (read_gone) { // reading goes on at the start of the one after it
        self->read_offset = 0;
    }
    drv_wal_mark_write(self, upto < self->read_last ? upto : self->read_last);
}
