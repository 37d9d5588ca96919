/*  drv_wal_reader — reading again what the log's own reading passed
    (drv_wal.h): an exporter that fell behind catches up from its own
    position while the log is read on for the others (docs/operations.md,
    exporter queues). It never cuts: what it reads was checked when first
    read, and anything it cannot read whole ends its segment for it. */
#include "drv_wal_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct drv_wal_reader_t {
    drv_wal_t *wal;
    int64_t want;          // the next number to hand out (older ones are skipped)
    int64_t segment_first; // the segment being read, by its first number
    int64_t offset;
    int fd;
    drv_wal_buf_t buf;
};

//  The index of the segment holding number (the last whose first is at most it), or count.
static size_t s_segment_of(const drv_wal_t *wal, int64_t number)
{
    size_t found = wal->count;
    for (size_t i = 0; i < wal->count && wal->segments[i].first <= number; i++) {
        found = i;
    }
    return found == wal->count && wal->count ? 0 : found;
}

drv_wal_reader_t *drv_wal_reader_open(drv_wal_t *wal, int64_t from)
{
    drv_wal_reader_t *self = calloc(1, sizeof *self);
    if (!self) {
        return NULL;
    }
    self->wal = wal;
    self->want = from;
    self->fd = -1;
    self->segment_first = wal->count ? wal->segments[s_segment_of(wal, from)].first : from;
    return self;
}

void drv_wal_reader_close(drv_wal_reader_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_wal_reader_t *self = *self_p;
    if (self->fd >= 0) {
        close(self->fd);
    }
    free(self->buf.data);
    free(self);
    *self_p = NULL;
}

//  On to the segment after the one being read: false when it was the newest.
static bool s_next_segment(drv_wal_reader_t *self, size_t index)
{
    if (index + 1 >= self->wal->count) {
        return false;
    }
    if (self->fd >= 0) {
        close(self->fd);
        self->fd = -1;
    }
    self->segment_first = self->wal->segments[index + 1].first;
    self->offset = 0;
    return true;
}

int drv_wal_reader_next(drv_wal_reader_t *self, drv_wal_entry_t *entry, char *err, size_t errlen)
{
    drv_wal_t *wal = self->wal;
    for (;;) {
        size_t index = s_segment_of(wal, self->segment_first);
        if (index >= wal->count) {
            return 0;
        }
        segment_t *segment = &wal->segments[index];
        if (segment->first != self->segment_first) {
            //  Its segment went (settled or dropped under it): on from the oldest left.
            self->segment_first = segment->first;
            self->offset = 0;
            if (self->fd >= 0) {
                close(self->fd);
                self->fd = -1;
            }
        }
        if (self->offset >= segment->bytes) {
            if (!s_next_segment(self, index)) {
                return 0;
            }
            continue;
        }
        if (self->fd < 0) {
            self->fd = drv_wal_open_segment(wal, segment, O_RDONLY);
            if (self->fd < 0) {
                snprintf(err, errlen, "cannot open %s: %s", segment->path, strerror(errno));
                return -1;
            }
        }
        int64_t number;
        uint32_t len, records;
        if (!drv_wal_header_at(self->fd, self->offset, segment->bytes, &number, &len, &records)) {
            self->offset = segment->bytes; // not whole: the log's own reading cut it, or will
            continue;
        }
        if (number < self->want) {
            self->offset += HEADER + (int64_t)len; // skipped by its header alone
            continue;
        }
        drv_wal_found_t what = drv_wal_entry_at(&self->buf, self->fd, self->offset, segment->bytes, entry);
        if (what == ENTRY_ERROR) {
            snprintf(err, errlen, "cannot read %s: %s", segment->path, strerror(errno ? errno : ENOMEM));
            return -1;
        }
        if (what != ENTRY_OK) {
            self->offset = segment->bytes;
            continue;
        }
        self->offset += HEADER + (int64_t)entry->len;
        self->want = entry->number + 1;
        return 1;
    }
}

//  Where the entry number starts in its segment (from the headers before
//  it), remembered for the last number asked: the figures ask often.
static int64_t s_offset_of(drv_wal_t *self, const segment_t *segment, int64_t number)
{
    if (self->offset_of_number == number && self->offset_of_segment == segment->first) {
        return self->offset_of;
    }
    int fd = drv_wal_open_segment(self, segment, O_RDONLY);
    int64_t at = 0, found;
    uint32_t len, records;
    while (fd >= 0 && drv_wal_header_at(fd, at, segment->bytes, &found, &len, &records) && found < number) {
        at += HEADER + (int64_t)len;
    }
    if (fd >= 0) {
        close(fd);
    }
    self->offset_of_number = number;
    self->offset_of_segment = segment->first;
    self->offset_of = at;
    return at;
}

int64_t drv_wal_bytes_from(drv_wal_t *self, int64_t number)
{
    if (!self->count) {
        return 0;
    }
    size_t first = s_segment_of(self, number);
    int64_t bytes = -s_offset_of(self, &self->segments[first], number);
    for (size_t i = first; i < self->count; i++) {
        bytes += self->segments[i].bytes;
    }
    return bytes > 0 ? bytes : 0;
}

int64_t drv_wal_segment_after(const drv_wal_t *self, int64_t number)
{
    for (size_t i = 0; i < self->count; i++) {
        if (self->segments[i].first > number) {
            return self->segments[i].first;
        }
    }
    return self->last + 1;
}

int64_t drv_wal_records_between(drv_wal_t *self, int64_t from, int64_t to)
{
    int64_t total = 0;
    for (size_t i = self->count ? s_segment_of(self, from) : 0; i < self->count && self->segments[i].first < to; i++) {
        segment_t *segment = &self->segments[i];
        int fd = drv_wal_open_segment(self, segment, O_RDONLY);
        int64_t number;
        uint32_t len, records;
        for (int64_t at = 0;
             fd >= 0 && drv_wal_header_at(fd, at, segment->bytes, &number, &len, &records) && number < to;
             at += HEADER + (int64_t)len) {
            total += number >= from ? records : 0;
        }
        if (fd >= 0) {
            close(fd);
        }
    }
    return total;
}

int64_t drv_wal_fit_from(drv_wal_t *self, int64_t from, int64_t max_bytes, int64_t *records_skipped)
{
    *records_skipped = 0;
    size_t first = self->count ? s_segment_of(self, from) : 0;
    int64_t ahead = 0;
    for (size_t i = first; i < self->count; i++) {
        ahead += self->segments[i].bytes;
    }
    //  Entries go from the oldest while what is ahead is more than max_bytes
    //  (those before from were never ahead: taken off without counting).
    for (size_t i = first; i < self->count && ahead > max_bytes; i++) {
        segment_t *segment = &self->segments[i];
        int fd = drv_wal_open_segment(self, segment, O_RDONLY);
        int64_t number = from, at = 0;
        uint32_t len, records;
        while (fd >= 0 && ahead > max_bytes && drv_wal_header_at(fd, at, segment->bytes, &number, &len, &records)) {
            ahead -= HEADER + (int64_t)len;
            at += HEADER + (int64_t)len;
            *records_skipped += number >= from ? records : 0;
            from = number >= from ? number + 1 : from;
        }
        if (fd >= 0) {
            close(fd);
        }
        if (at < segment->bytes && ahead > max_bytes) {
            ahead -= segment->bytes - at; // not whole past at: skipped as the log's own reading cut it
            from = i + 1 < self->count ? self->segments[i + 1].first : self->last + 1;
        }
    }
    return from;
}
