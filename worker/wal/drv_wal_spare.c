/*  drv_wal_spare — segments recycled (drv_wal.h; docs/benchmarks.md, B17):
    a settled segment is not deleted but renamed spare-{serial:06}.log, and
    the next segment the log needs is a spare renamed to its name and
    written over from its start. Its blocks are allocated and written
    already, so appending to it reserves nothing and an fdatasync writes
    data pages only (no size, no allocation to record); a new file is made
    at full size (fallocate) for the same reason. What was in a spare before
    stays past the new entries, numbered below them: the reader stops where
    numbers do not follow on. Spares past SPARES_KEPT are deleted, by the
    sync thread when there is one (the last close of a file frees its
    blocks, which no answer should wait for), and so are all but one once
    none was taken or returned for SPARES_IDLE_MS: an idle log does not
    hold four segments of disk. */
#include "drv_wal_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int s_push(drv_wal_name_t **list, size_t *count, size_t *cap, const char *name)
{
    if (*count == *cap) {
        size_t grown_cap = *cap ? 2 * *cap : 4;
        drv_wal_name_t *grown = realloc(*list, grown_cap * sizeof *grown);
        if (!grown) {
            return -1;
        }
        *list = grown;
        *cap = grown_cap;
    }
    snprintf((*list)[(*count)++], NAME_MAX_LEN, "%s", name);
    return 0;
}

//  A spare's name, taken: spare-{serial:06}.log.
static void s_spare_name(drv_wal_t *self, drv_wal_name_t name)
{
    snprintf(name, NAME_MAX_LEN, SPARE_PREFIX "%06" PRId64 ".log", self->spare_serial++);
}

//  Deleted now, or by the next sync job.
static void s_doom(drv_wal_t *self, const char *name)
{
    if (!self->defer_deletes || s_push(&self->doomed, &self->doomed_count, &self->doomed_cap, name) != 0) {
        unlinkat(self->dir_fd, name, 0);
    }
}

//  The largest input number written in a spare (its older entries).
static int64_t s_highest(const drv_wal_t *self, const char *name)
{
    segment_t segment = {0};
    snprintf(segment.name, sizeof segment.name, "%s", name);
    int fd = drv_wal_open_segment(self, &segment, O_RDONLY);
    int64_t highest = 0, number, expect = -1;
    uint32_t len, records;
    for (int64_t at = 0;
         fd >= 0 && drv_wal_header_at(fd, at, INT64_MAX, &number, &len, &records) && (expect < 0 || number == expect);
         at += HEADER + (int64_t)len) {
        highest = number > highest ? number : highest;
        expect = number + 1;
    }
    if (fd >= 0) {
        close(fd);
    }
    return highest;
}

void drv_wal_spare_found(drv_wal_t *self, const char *name)
{
    //  Numbers go on above whatever it holds: its older entries never follow on from a new one's.
    int64_t highest = s_highest(self, name);
    self->last = highest > self->last ? highest : self->last;
    long long serial = -1;
    char tail[8] = "";
    if (sscanf(name, SPARE_PREFIX "%lld%7s", &serial, tail) == 2 && strcmp(tail, ".log") == 0 && serial >= 0) {
        self->spare_serial = serial + 1 > self->spare_serial ? serial + 1 : self->spare_serial;
    } else {
        serial = -1; // a segment that is a spare by its content: renamed one below
    }
    if (self->spare_count >= SPARES_KEPT) {
        s_doom(self, name);
        return;
    }
    drv_wal_name_t spare;
    snprintf(spare, sizeof spare, "%s", name);
    if (serial < 0) {
        s_spare_name(self, spare);
        if (renameat(self->dir_fd, name, self->dir_fd, spare) != 0) {
            unlinkat(self->dir_fd, name, 0);
            return;
        }
    }
    if (s_push(&self->spares, &self->spare_count, &self->spare_cap, spare) != 0) {
        s_doom(self, spare);
    }
}

void drv_wal_spare_return(drv_wal_t *self, const segment_t *segment)
{
    self->spare_used = true;
    drv_wal_name_t spare;
    if (self->spare_count >= SPARES_KEPT) {
        s_doom(self, segment->name);
        return;
    }
    s_spare_name(self, spare);
    if (renameat(self->dir_fd, segment->name, self->dir_fd, spare) != 0 ||
        s_push(&self->spares, &self->spare_count, &self->spare_cap, spare) != 0) {
        s_doom(self, segment->name); // whichever name it has now: one of the two is gone
        s_doom(self, spare);
    }
}

int drv_wal_spare_take(drv_wal_t *self, const char *name)
{
    self->spare_used = true;
    int fd = -1;
    while (fd < 0 && self->spare_count > 0) {
        const char *spare = self->spares[--self->spare_count];
        if (renameat2(self->dir_fd, spare, self->dir_fd, name, RENAME_NOREPLACE) != 0) {
            continue; // gone under us (a hand in the directory): the next, or a new file
        }
        fd = openat(self->dir_fd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            unlinkat(self->dir_fd, name, 0);
        }
    }
    if (fd < 0) {
        fd = openat(self->dir_fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            return -1;
        }
    }
    self->dir_dirty = true;
    //  At full size: a no-op for a spare that has it. Where the disk has no
    //  room for a whole segment, the file grows as it is written instead, and
    //  a full disk is found by the write.
    if (fallocate(fd, 0, 0, (off_t)self->segment_bytes) != 0 && errno != EOPNOTSUPP && errno != ENOSPC) {
        int saved = errno;
        close(fd);
        unlinkat(self->dir_fd, name, 0);
        errno = saved;
        return -1;
    }
    return fd;
}

void drv_wal_tick(drv_wal_t *self, int64_t now_ms)
{
    if (self->spare_used || self->spares_quiet_since == 0) {
        self->spare_used = false;
        self->spares_quiet_since = now_ms;
        return;
    }
    if (now_ms - self->spares_quiet_since < SPARES_IDLE_MS) {
        return;
    }
    while (self->spare_count > 1) { // an idle log keeps one, for its next segment
        s_doom(self, self->spares[--self->spare_count]);
    }
    self->spares_quiet_since = now_ms;
}
