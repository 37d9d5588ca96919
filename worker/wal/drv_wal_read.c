/*  drv_wal_read — the log as found at open (drv_wal.h): segments scanned
    entry by entry, a torn tail cut (its bytes kept in quarantine/), a
    damaged segment moved into quarantine/, and the replay that reads the
    intact entries back one at a time. */
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
//  ---------------------------------------------------------------- open

typedef enum { ENTRY_OK, ENTRY_END, ENTRY_TORN, ENTRY_BAD, ENTRY_ERROR } entry_t;

//  The entry at offset of fd (size bytes long): its number and length.
static entry_t s_entry(drv_wal_t *self, int fd, int64_t offset, int64_t size, int64_t *number, uint32_t *len)
{
    if (offset == size) {
        return ENTRY_END;
    }
    unsigned char head[HEADER];
    if (size - offset < HEADER || s_pread(fd, head, HEADER, offset) != 1) {
        return ENTRY_TORN;
    }
    *len = s_get32(head);
    if (*len > MAX_ENTRY) {
        return ENTRY_BAD;
    }
    if (size - offset - HEADER < (int64_t)*len) {
        return ENTRY_TORN;
    }
    if (s_grow_buf(self, *len + 8) != 0) {
        return ENTRY_ERROR;
    }
    memcpy(self->buf, head + 8, 8);
    if (*len && s_pread(fd, self->buf + 8, *len, offset + HEADER) != 1) {
        return ENTRY_ERROR;
    }
    if (drv_crc32c(0, self->buf, *len + 8) != s_get32(head + 4)) {
        return ENTRY_BAD;
    }
    *number = (int64_t)s_get64(head + 8);
    return ENTRY_OK;
}

static int s_first_of(const char *name, int64_t *first)
{
    char *end = NULL;
    long long n = strtoll(name, &end, 10);
    if (end == name || strcmp(end, ".wal") != 0 || n < 0) {
        return -1;
    }
    *first = n;
    return 0;
}

static int s_by_first(const void *a, const void *b)
{
    int64_t x = ((const segment_t *)a)->first, y = ((const segment_t *)b)->first;
    return x < y ? -1 : x > y;
}

//  Moves segment into dir/quarantine/, keeping its name; the path follows it.
static int s_quarantine(drv_wal_t *self, segment_t *segment, char *err, size_t errlen)
{
    char qdir[4200], target[8400];
    snprintf(qdir, sizeof qdir, "%s/quarantine", self->dir);
    if (mkdir(qdir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", qdir, strerror(errno));
        return -1;
    }
    const char *name = strrchr(segment->path, '/');
    snprintf(target, sizeof target, "%s%s", qdir, name ? name : "/segment.wal");
    if (rename(segment->path, target) != 0) {
        snprintf(err, errlen, "cannot move %s into quarantine: %s", segment->path, strerror(errno));
        return -1;
    }
    snprintf(segment->path, sizeof segment->path, "%s", target);
    self->dir_dirty = true;
    return 0;
}

//  Keeps the bytes a torn tail cut off in quarantine/, so that nothing is
//  discarded unseen (a length damaged in the newest segment looks torn too).
static void s_keep_tail(drv_wal_t *self, int fd, const segment_t *segment, int64_t offset, int64_t size)
{
    char qdir[4200], target[8400];
    snprintf(qdir, sizeof qdir, "%s/quarantine", self->dir);
    mkdir(qdir, 0700);
    const char *name = strrchr(segment->path, '/');
    snprintf(target, sizeof target, "%s/torn-%s", qdir, name ? name + 1 : "segment.wal");
    int out = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    char chunk[65536];
    for (int64_t at = offset; out >= 0 && at < size;) {
        size_t n = size - at < (int64_t)sizeof chunk ? (size_t)(size - at) : sizeof chunk;
        if (s_pread(fd, chunk, n, at) != 1 || write(out, chunk, n) != (ssize_t)n) {
            break;
        }
        at += (int64_t)n;
    }
    if (out >= 0) {
        fdatasync(out);
        close(out);
    }
}

//  Reads one segment found at open: its intact entries are to be replayed;
//  a torn tail of the newest segment is cut (its bytes kept in quarantine);
//  a bad entry, or one cut short in an older segment (no crash leaves that),
//  sends the segment to quarantine.
static int s_scan(drv_wal_t *self, segment_t *segment, bool newest, drv_wal_found_t *found, char *err, size_t errlen)
{
    int fd = open(segment->path, O_RDWR | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot open %s: %s", segment->path, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    int64_t offset = 0, number = 0;
    uint32_t len = 0;
    entry_t what;
    segment->last = segment->first - 1;
    errno = 0;
    while ((what = s_entry(self, fd, offset, st.st_size, &number, &len)) == ENTRY_OK) {
        segment->last = number;
        self->last_found = number > self->last_found ? number : self->last_found;
        found->entries++;
        offset += HEADER + len;
    }
    segment->bytes = offset;
    int rc = 0;
    if (what == ENTRY_TORN && !newest) {
        what = ENTRY_BAD;
    }
    if (what == ENTRY_TORN) {
        s_keep_tail(self, fd, segment, offset, st.st_size);
        found->torn_bytes += st.st_size - offset;
        if (ftruncate(fd, (off_t)offset) != 0 || fdatasync(fd) != 0) {
            snprintf(err, errlen, "cannot cut the torn tail of %s: %s", segment->path, strerror(errno));
            rc = -1;
        }
    } else if (what == ENTRY_ERROR) {
        snprintf(err, errlen, "cannot read %s: %s", segment->path, strerror(errno ? errno : ENOMEM));
        rc = -1;
    }
    close(fd);
    if (rc == 0 && what == ENTRY_BAD) {
        rc = s_quarantine(self, segment, err, errlen);
        segment->quarantined = true;
        found->quarantined++;
    }
    if (rc == 0 && offset > 0) {
        self->replay[self->replay_count++] = *segment;
    }
    return rc;
}

drv_wal_t *drv_wal_open(const char *dir, size_t segment_bytes, drv_wal_found_t *found, char *err, size_t errlen)
{
    memset(found, 0, sizeof *found);
    drv_wal_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(self->dir, sizeof self->dir, "%s", dir);
    self->segment_bytes = segment_bytes;
    self->fd = self->replay_fd = self->dir_fd = -1;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        drv_wal_close(&self);
        return NULL;
    }
    self->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = self->dir_fd >= 0 ? opendir(dir) : NULL;
    if (!d) {
        snprintf(err, errlen, "cannot read %s: %s", dir, strerror(errno));
        drv_wal_close(&self);
        return NULL;
    }
    segment_t *list = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        segment_t segment = {0};
        if (s_first_of(e->d_name, &segment.first) == 0) {
            snprintf(segment.path, sizeof segment.path, "%s/%s", dir, e->d_name);
            rc = drv_wal_push(&list, &n, &cap, &segment);
        }
    }
    closedir(d);
    if (n > 1) {
        qsort(list, n, sizeof *list, s_by_first);
    }
    found->segments = (int64_t)n;
    self->replay = calloc(n ? n : 1, sizeof *self->replay);
    if (rc != 0 || !self->replay) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        segment_t *segment = &list[i];
        rc = s_scan(self, segment, i == n - 1, found, err, errlen);
        if (rc == 0 && !segment->quarantined && segment->bytes > 0) {
            rc = drv_wal_push(&self->segments, &self->count, &self->cap, segment);
            self->bytes += segment->bytes;
        } else if (rc == 0 && !segment->quarantined) {
            unlink(segment->path); // nothing intact in it
            self->dir_dirty = true;
        }
    }
    free(list);
    if (rc != 0) {
        drv_wal_close(&self);
        return NULL;
    }
    return self;
}

void drv_wal_close(drv_wal_t **self_p)
{
    drv_wal_t *self = *self_p;
    if (!self) {
        return;
    }
    *self_p = NULL;
    if (self->fd >= 0) {
        close(self->fd);
    }
    if (self->replay_fd >= 0) {
        close(self->replay_fd);
    }
    if (self->dir_fd >= 0) {
        close(self->dir_fd);
    }
    free(self->segments);
    free(self->replay);
    free(self->buf);
    free(self);
}

//  ---------------------------------------------------------------- replay

int drv_wal_replay_next(drv_wal_t *self, int64_t *number, const void **data, size_t *len, char *err, size_t errlen)
{
    while (self->replay_at < self->replay_count) {
        segment_t *segment = &self->replay[self->replay_at];
        if (self->replay_fd < 0) {
            self->replay_fd = open(segment->path, O_RDONLY | O_CLOEXEC);
            self->replay_offset = 0;
            if (self->replay_fd < 0) {
                snprintf(err, errlen, "cannot open %s: %s", segment->path, strerror(errno));
                return -1;
            }
        }
        uint32_t size = 0;
        entry_t what = self->replay_offset < segment->bytes
                           ? s_entry(self, self->replay_fd, self->replay_offset, segment->bytes, number, &size)
                           : ENTRY_END;
        if (what == ENTRY_OK) {
            self->replay_offset += HEADER + size;
            *data = self->buf + 8;
            *len = size;
            return 1;
        }
        if (what != ENTRY_END) { // it was read whole at open: changed under us since
            snprintf(err, errlen, "%s changed while being replayed", segment->path);
            return -1;
        }
        close(self->replay_fd);
        self->replay_fd = -1;
        self->replay_at++;
    }
    return 0;
}
