/*  drv_wal_read — reading the log back (drv_wal.h): entries one at a time,
    checked as they are read; damage is cut off (drv_wal_quarantine.c). */
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

static int s_grow_buf(drv_wal_buf_t *buf, size_t len)
{
    if (len <= buf->cap) {
        return 0;
    }
    char *grown = realloc(buf->data, len);
    if (!grown) {
        return -1;
    }
    buf->data = grown;
    buf->cap = len;
    return 0;
}

int drv_wal_header_at(int fd, int64_t offset, int64_t size, int64_t *number, uint32_t *len, uint32_t *records)
{
    unsigned char head[HEADER];
    if (size - offset < HEADER || drv_wal_pread(fd, head, HEADER, offset) != 1) {
        return 0;
    }
    *len = s_get32(head);
    *number = (int64_t)s_get64(head + 8);
    *records = s_get32(head + 24);
    //  A number no log reaches is damage (appends stop at the bound): a
    //  spare's junk taken for an entry must not raise the numbering past it.
    return *len <= MAX_ENTRY && size - offset - HEADER >= (int64_t)*len && *number >= 1 &&
           *number <= DRV_WAL_MAX_NUMBER;
}

drv_wal_found_t drv_wal_entry_at(drv_wal_buf_t *buf, int fd, int64_t offset, int64_t size, drv_wal_entry_t *entry)
{
    if (offset >= size) {
        return ENTRY_END;
    }
    unsigned char head[HEADER];
    errno = 0;
    if (size - offset < HEADER) {
        return ENTRY_TORN;
    }
    int rc = drv_wal_pread(fd, head, HEADER, offset);
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
    if (s_grow_buf(buf, len + HEADER - 8) != 0) {
        return ENTRY_ERROR;
    }
    memcpy(buf->data, head + 8, HEADER - 8);
    rc = len ? drv_wal_pread(fd, buf->data + HEADER - 8, len, offset + HEADER) : 1;
    if (rc != 1) {
        return rc == 0 ? ENTRY_TORN : ENTRY_ERROR;
    }
    int64_t number = (int64_t)s_get64(head + 8);
    if (drv_crc32c(0, buf->data, len + HEADER - 8) != s_get32(head + 4) || number < 1 || number > DRV_WAL_MAX_NUMBER) {
        return ENTRY_BAD;
    }
    *entry = (drv_wal_entry_t){.number = number,
                               .time_ms = (int64_t)s_get64(head + 16),
                               .records = s_get32(head + 24),
                               .data = buf->data + HEADER - 8,
                               .len = len};
    return ENTRY_OK;
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
            self->read_fd = drv_wal_open_segment(self, segment, O_RDONLY);
            if (self->read_fd < 0) {
                snprintf(err, errlen, "cannot open %s: %s", segment->path, strerror(errno));
                return -1;
            }
        }
        drv_wal_found_t what = drv_wal_entry_at(&self->buf, self->read_fd, self->read_offset, segment->bytes, entry);
        if (what == ENTRY_OK && entry->number > self->mark &&
            (entry->number <= self->read_last || entry->number < segment->first || entry->number > segment->last)) {
            what = ENTRY_BAD; // whole, but not numbered on: no crash does that in the middle of the log
        }
        if (what == ENTRY_OK) {
            self->read_offset += HEADER + (int64_t)entry->len;
            if (entry->number <= self->mark) {
                continue; // settled before a restart (the settled mark): not again
            }
            segment->read_records += entry->records;
            self->read_last = entry->number;
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
            int fd = drv_wal_open_segment(self, &self->segments[i], O_RDONLY);
            unsigned char head[HEADER];
            int rc = fd >= 0 ? drv_wal_pread(fd, head, HEADER, offset) : -1;
            if (fd >= 0) {
                close(fd);
            }
            return rc == 1 ? (int64_t)s_get64(head + 16) : -1;
        }
    }
    return -1;
}

int64_t drv_wal_count_records(const drv_wal_t *self, const segment_t *segment, int64_t after)
{
    int64_t records = 0, bytes = segment->bytes;
    int fd = drv_wal_open_segment(self, segment, O_RDONLY);
    unsigned char head[HEADER];
    for (int64_t at = 0; fd >= 0 && at + HEADER <= bytes && drv_wal_pread(fd, head, HEADER, at) == 1;) {
        records += (int64_t)s_get64(head + 8) > after ? s_get32(head + 24) : 0;
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
        self->bytes -= segment->bytes - segment->settled_bytes;
        drv_wal_spare_return(self, segment);
        memmove(segment, segment + 1, (self->count - i - 1) * sizeof *segment);
        self->count--;
        return records;
    }
    return -1;
}
