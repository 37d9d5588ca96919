/*  drv_wal_read — reading the log back (drv_wal.h): entries one at a time,
    checked as they are read; damage cut off into quarantine. */
#include "drv_wal_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t s_get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t s_get64(const unsigned char *p)
{
    return (uint64_t)s_get32(p) | (uint64_t)s_get32(p + 4) << 32;
}

//  Reads exactly len bytes at offset: 1, 0 at the end of the file (or short), -1 on error.
static int s_pread(int fd, void *buf, size_t len, int64_t offset)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(offset + (int64_t)got));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return -1;
        }
        if (n == 0) {
            return 0;
        }
        got += (size_t)n;
    }
    return 1;
}

static int s_grow_buf(drv_wal_t *self, size_t len)
{
    if (len <= self->buf_cap) {
        return 0;
    }
    char *grown = realloc(self->buf, len);
    if (!grown) {
        return -1;
    }
    self->buf = grown;
    self->buf_cap = len;
    return 0;
}

drv_wal_found_t drv_wal_entry_at(drv_wal_t *self, int fd, int64_t offset, int64_t size, drv_wal_entry_t *entry)
{
    if (offset >= size) {
        return ENTRY_END;
    }
    unsigned char head[HEADER];
    errno = 0;
    if (size - offset < HEADER) {
        return ENTRY_TORN;
    }
    int rc = s_pread(fd, head, HEADER, offset);
    if (rc != 1) {
        return rc == 0 ? ENTRY_TORN : ENTRY_ERROR;
    }
    uint32_t len = s_get32(head);
    if (len > MAX_ENTRY) {
        return ENTRY_BAD;
    }
    if (size - offset - HEADER < (int64_t)len) {
        return ENTRY_TORN;
    }
    if (s_grow_buf(self, len + HEADER - 8) != 0) {
        return ENTRY_ERROR;
    }
    memcpy(self->buf, head + 8, HEADER - 8);
    rc = len ? s_pread(fd, self->buf + HEADER - 8, len, offset + HEADER) : 1;
    if (rc != 1) {
        return rc == 0 ? ENTRY_TORN : ENTRY_ERROR;
    }
    if (drv_crc32c(0, self->buf, len + HEADER - 8) != s_get32(head + 4)) {
        return ENTRY_BAD;
    }
    *entry = (drv_wal_entry_t){.number = (int64_t)s_get64(head + 8),
                               .time_ms = (int64_t)s_get64(head + 16),
                               .records = s_get32(head + 24),
                               .data = self->buf + HEADER - 8,
                               .len = len};
    return ENTRY_OK;
}

int drv_wal_cut(drv_wal_t *self, segment_t *segment, int64_t offset, const char *prefix, char *err, size_t errlen)
{
    char target[8400];
    if (mkdir(self->quarantine, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", self->quarantine, strerror(errno));
        return -1;
    }
    const char *name = strrchr(segment->path, '/');
    snprintf(target, sizeof target, "%s/%s-%s", self->quarantine, prefix, name ? name + 1 : "segment.wal");
    int in = open(segment->path, O_RDWR | O_CLOEXEC);
    int out = in >= 0 ? open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    int rc = in >= 0 && out >= 0 ? 0 : -1;
    char chunk[65536];
    for (int64_t at = offset; rc == 0 && at < segment->bytes;) {
        size_t n = segment->bytes - at < (int64_t)sizeof chunk ? (size_t)(segment->bytes - at) : sizeof chunk;
        if (s_pread(in, chunk, n, at) != 1 || write(out, chunk, n) != (ssize_t)n) {
            rc = -1;
        }
        at += (int64_t)n;
    }
    //  Kept before it is cut: a crash between the two leaves both copies.
    if (rc != 0 || fdatasync(out) != 0 || ftruncate(in, (off_t)offset) != 0 || fdatasync(in) != 0) {
        snprintf(err, errlen, "cannot move the damaged end of %s into %s: %s", segment->path, target,
                 strerror(errno ? errno : EIO));
        rc = -1;
    }
    if (in >= 0) {
        close(in);
    }
    if (out >= 0) {
        close(out);
    }
    if (rc == 0) {
        self->bytes -= segment->bytes - offset;
        segment->bytes = offset;
    }
    return rc;
}

//  ---------------------------------------------------------------- reading

int drv_wal_next(drv_wal_t *self, drv_wal_entry_t *entry, char *err, size_t errlen)
{
    while (self->read_index < self->count) {
        segment_t *segment = &self->segments[self->read_index];
        if (self->read_offset >= segment->bytes) {
            if (self->read_index == self->count - 1) {
                return 0; // everything appended was read
            }
            if (self->read_fd >= 0) {
                close(self->read_fd);
                self->read_fd = -1;
            }
            self->read_index++;
            self->read_offset = 0;
            continue;
        }
        if (self->read_fd < 0) {
            self->read_fd = open(segment->path, O_RDONLY | O_CLOEXEC);
            if (self->read_fd < 0) {
                snprintf(err, errlen, "cannot open %s: %s", segment->path, strerror(errno));
                return -1;
            }
        }
        drv_wal_found_t what = drv_wal_entry_at(self, self->read_fd, self->read_offset, segment->bytes, entry);
        if (what == ENTRY_OK) {
            self->read_offset += HEADER + (int64_t)entry->len;
            segment->read_records += entry->records;
            return 1;
        }
        if (what == ENTRY_ERROR) {
            snprintf(err, errlen, "cannot read %s: %s", segment->path, strerror(errno ? errno : ENOMEM));
            return -1;
        }
        //  Bad or cut short where no crash cuts (a crash only tears the
        //  newest segment's end, cut at open): damage. What follows in the
        //  segment is lost to replay but kept.
        self->damage.corrupt_segments++;
        self->damage.corrupt_bytes += segment->bytes - self->read_offset;
        if (segment->records > segment->read_records) {
            self->damage.corrupt_records += segment->records - segment->read_records;
            segment->records = segment->read_records;
        }
        if (drv_wal_cut(self, segment, self->read_offset, "bad", err, errlen) != 0) {
            return -1;
        }
    }
    return 0;
}

bool drv_wal_unread(const drv_wal_t *self)
{
    for (size_t i = self->read_index; i < self->count; i++) {
        if (self->segments[i].bytes > (i == self->read_index ? self->read_offset : 0)) {
            return true;
        }
    }
    return false;
}

int64_t drv_wal_unread_since(drv_wal_t *self)
{
    for (size_t i = self->read_index; i < self->count; i++) {
        int64_t offset = i == self->read_index ? self->read_offset : 0;
        if (self->segments[i].bytes >= offset + HEADER) {
            int fd = open(self->segments[i].path, O_RDONLY | O_CLOEXEC);
            unsigned char head[HEADER];
            int rc = fd >= 0 ? s_pread(fd, head, HEADER, offset) : -1;
            if (fd >= 0) {
                close(fd);
            }
            return rc == 1 ? (int64_t)s_get64(head + 16) : -1;
        }
    }
    return -1;
}

int64_t drv_wal_count_records(const char *path, int64_t bytes)
{
    int64_t records = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    unsigned char head[HEADER];
    for (int64_t at = 0; fd >= 0 && at + HEADER <= bytes && s_pread(fd, head, HEADER, at) == 1;) {
        records += s_get32(head + 24);
        at += HEADER + (int64_t)s_get32(head);
    }
    if (fd >= 0) {
        close(fd);
    }
    return records;
}

int64_t drv_wal_drop_oldest_unread(drv_wal_t *self)
{
    for (size_t i = self->read_index; i < self->count; i++) {
        segment_t *segment = &self->segments[i];
        bool appending = self->fd >= 0 && i == self->count - 1;
        if (appending || (i == self->read_index && self->read_offset > 0)) {
            continue;
        }
        int64_t records = segment->records;
        if (i == self->read_index && self->read_fd >= 0) {
            close(self->read_fd);
            self->read_fd = -1;
        }
        unlink(segment->path);
        self->bytes -= segment->bytes;
        self->dir_dirty = true;
        memmove(segment, segment + 1, (self->count - i - 1) * sizeof *segment);
        self->count--;
        return records;
    }
    return -1;
}
