/*  drv_wal — see drv_wal.h. This file: opening, appending, syncing and
    settling (drv_wal_read.c reads entries back and cuts damage away).
    Segments are kept oldest first; the newest is the one appended to;
    segments found at open are never appended to. */
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

static int s_push(drv_wal_t *self, const segment_t *segment)
{
    if (self->count == self->cap) {
        size_t grown_cap = self->cap ? 2 * self->cap : 8;
        segment_t *grown = realloc(self->segments, grown_cap * sizeof *grown);
        if (!grown) {
            return -1;
        }
        self->segments = grown;
        self->cap = grown_cap;
    }
    self->segments[self->count++] = *segment;
    return 0;
}

//  ---------------------------------------------------------------- open

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

//  The newest segment found: read through to find its last entry; a torn
//  tail (a crash mid-write) or a bad entry ends it there.
static int s_check_newest(drv_wal_t *self, segment_t *segment, char *err, size_t errlen)
{
    int fd = drv_wal_open_segment(self, segment, O_RDONLY);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", segment->path, strerror(errno));
        return -1;
    }
    int64_t offset = 0;
    drv_wal_entry_t entry;
    drv_wal_found_t what;
    while ((what = drv_wal_entry_at(&self->buf, fd, offset, segment->bytes, &entry)) == ENTRY_OK) {
        segment->last = entry.number;
        segment->records += entry.records;
        offset += HEADER + (int64_t)entry.len;
    }
    close(fd);
    if (what == ENTRY_ERROR) {
        snprintf(err, errlen, "cannot read %s: %s", segment->path, strerror(errno ? errno : ENOMEM));
        return -1;
    }
    if (what == ENTRY_END) {
        return 0;
    }
    if (what == ENTRY_TORN) {
        self->damage.torn_bytes += segment->bytes - offset;
    } else {
        self->damage.corrupt_segments++;
        self->damage.corrupt_bytes += segment->bytes - offset;
    }
    return drv_wal_cut(self, segment, offset, what == ENTRY_TORN ? "torn" : "bad", err, errlen);
}

static int s_list(drv_wal_t *self, char *err, size_t errlen)
{
    int list_fd = fcntl(self->dir_fd, F_DUPFD_CLOEXEC, 0);
    DIR *d = list_fd >= 0 ? fdopendir(list_fd) : NULL;
    if (!d) {
        snprintf(err, errlen, "cannot read %s: %s", self->dir, strerror(errno));
        if (list_fd >= 0) {
            close(list_fd);
        }
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        segment_t segment = {0};
        struct stat st;
        if (s_first_of(e->d_name, &segment.first) != 0 || strlen(e->d_name) >= sizeof segment.name) {
            continue;
        }
        if (fstatat(self->dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT) {
                continue;
            }
            snprintf(err, errlen, "cannot read %s/%s: %s", self->dir, e->d_name, strerror(errno));
            closedir(d);
            return -1;
        }
        if (!S_ISREG(st.st_mode)) {
            drv_wal_set_aside(self, e->d_name,
                              S_ISLNK(st.st_mode)    ? "a symbolic link"
                              : S_ISDIR(st.st_mode)  ? "a directory"
                              : S_ISFIFO(st.st_mode) ? "a FIFO"
                                                     : "not a regular file");
            continue;
        }
        snprintf(segment.name, sizeof segment.name, "%s", e->d_name);
        snprintf(segment.path, sizeof segment.path, "%s/%s", self->dir, e->d_name);
        segment.bytes = st.st_size;
        if (s_push(self, &segment) != 0) {
            snprintf(err, errlen, "cannot read %s: out of memory", segment.path);
            closedir(d);
            return -1;
        }
    }
    closedir(d);
    if (self->count > 1) {
        qsort(self->segments, self->count, sizeof *self->segments, s_by_first);
    }
    for (size_t i = 0; i + 1 < self->count; i++) {
        self->segments[i].last = self->segments[i + 1].first - 1;
    }
    for (size_t i = 0; i < self->count; i++) {
        self->bytes += self->segments[i].bytes; // a cut below takes its part off
    }
    size_t checked = self->count; // the newest, read whole at open (none: count)
    if (self->count > 0) {
        segment_t *newest = &self->segments[self->count - 1];
        newest->last = newest->first - 1;
        checked = self->count - 1;
        if (s_check_newest(self, newest, err, errlen) != 0) {
            return -1;
        }
        //  Numbers go on after it, and after its name (entries numbered below
        //  the name they are filed under are damage, but the next segment's
        //  name must still be free).
        self->last = newest->last > newest->first ? newest->last : newest->first;
        if (newest->bytes == 0) { // nothing whole in it (a crash right after it was made): gone, its name free
            unlinkat(self->dir_fd, newest->name, 0);
            self->count--;
            self->dir_dirty = true;
            self->last = newest->first - 1;
            checked = self->count;
        }
    }
    for (size_t i = 0; i < self->count; i++) {
        segment_t *segment = &self->segments[i];
        if (i != checked) { // the newest counted its records as it was checked
            segment->records = drv_wal_count_records(self, segment);
        }
        self->found_records += segment->records;
    }
    return 0;
}

drv_wal_t *drv_wal_open(const char *dir, const char *quarantine_dir, size_t segment_bytes, char *err, size_t errlen)
{
    drv_wal_t *self = calloc(1, sizeof *self);
    if (self) {
        self->offset_of_number = -1;
    }
    if (!self) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(self->dir, sizeof self->dir, "%s", dir);
    snprintf(self->quarantine, sizeof self->quarantine, "%s", quarantine_dir);
    self->segment_bytes = segment_bytes;
    self->fd = self->read_fd = self->dir_fd = self->quarantine_fd = -1;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        drv_wal_close(&self);
        return NULL;
    }
    self->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (self->dir_fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", dir,
                 errno == ELOOP || errno == ENOTDIR ? "not a directory (a link is refused)" : strerror(errno));
        drv_wal_close(&self);
        return NULL;
    }
    if (s_list(self, err, errlen) != 0) {
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
    if (self->read_fd >= 0) {
        close(self->read_fd);
    }
    if (self->dir_fd >= 0) {
        close(self->dir_fd);
    }
    if (self->quarantine_fd >= 0) {
        close(self->quarantine_fd);
    }
    free(self->segments);
    free(self->buf.data);
    free(self);
}

//  ---------------------------------------------------------------- appending

static int s_start_segment(drv_wal_t *self, int64_t first, char *err, size_t errlen)
{
    segment_t segment = {.first = first, .last = first - 1};
    snprintf(segment.name, sizeof segment.name, "%020" PRId64 ".wal", first);
    snprintf(segment.path, sizeof segment.path, "%s/%s", self->dir, segment.name);
    int fd = openat(self->dir_fd, segment.name, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || s_push(self, &segment) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", segment.path, strerror(fd < 0 ? errno : ENOMEM));
        if (fd >= 0) {
            close(fd);
            unlinkat(self->dir_fd, segment.name, 0);
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

//  Writes iov[0..count) whole at the end of the current segment; on failure
//  cuts back what went out, so that the log stays a sequence of whole entries.
static int s_write(drv_wal_t *self, segment_t *current, struct iovec *iov, int count, size_t want, char *err,
                   size_t errlen)
{
    size_t done = 0;
    int first = 0;
    while (done < want) {
        ssize_t n = writev(self->fd, iov + first, count - first);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            snprintf(err, errlen, "cannot write %s: %s", current->path, n < 0 ? strerror(errno) : "no progress");
            if (ftruncate(self->fd, (off_t)current->bytes) != 0) {
                snprintf(err, errlen, "cannot write %s, nor cut the half entry: %s", current->path, strerror(errno));
            }
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
        if (current->bytes == 0) { // a segment with nothing in it: gone again
            close(self->fd);
            self->fd = -1;
            unlinkat(self->dir_fd, current->name, 0);
            self->count--;
        }
        return -1;
    }
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
    }
    return number;
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

void drv_wal_sync_start(drv_wal_t *self, drv_wal_sync_job_t *job)
{
    job->fd = self->dirty && self->fd >= 0 ? fcntl(self->fd, F_DUPFD_CLOEXEC, 0) : -1;
    job->dir_fd = self->dir_dirty && self->dir_fd >= 0 ? fcntl(self->dir_fd, F_DUPFD_CLOEXEC, 0) : -1;
    job->last = self->last;
    self->dirty = self->dirty && job->fd < 0 && self->fd >= 0; // a dup that failed stays to do
    self->dir_dirty = self->dir_dirty && job->dir_fd < 0;
}

int drv_wal_sync_run(drv_wal_sync_job_t *job, char *err, size_t errlen)
{
    int rc = 0;
    if (job->fd >= 0 && fdatasync(job->fd) != 0) {
        snprintf(err, errlen, "cannot sync the log: %s", strerror(errno));
        rc = -1;
    }
    if (rc == 0 && job->dir_fd >= 0 && fsync(job->dir_fd) != 0) {
        snprintf(err, errlen, "cannot sync the log's directory: %s", strerror(errno));
        rc = -1;
    }
    return rc;
}

void drv_wal_sync_release(drv_wal_sync_job_t *job)
{
    if (job->fd >= 0) {
        close(job->fd);
    }
    if (job->dir_fd >= 0) {
        close(job->dir_fd);
    }
    job->fd = job->dir_fd = -1;
}

void drv_wal_sync_failed(drv_wal_t *self)
{
    self->dirty = self->fd >= 0;
    self->dir_dirty = true;
}

bool drv_wal_dirty(const drv_wal_t *self)
{
    return self->dirty || self->dir_dirty;
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
        if (read && segment->last <= upto && !(appending && self->dirty)) {
            if (appending) {
                close(self->fd); // the next input starts a new one
                self->fd = -1;
            }
            if (i == self->read_index) {
                read_gone = true;
            } else {
                gone_before++;
            }
            unlinkat(self->dir_fd, segment->name, 0);
            self->bytes -= segment->bytes;
            self->dir_dirty = true;
        } else {
            self->segments[kept++] = *segment;
        }
    }
    self->count = kept;
    self->read_index -= gone_before;
    if (read_gone) { // reading goes on at the start of the one after it
        if (self->read_fd >= 0) {
            close(self->read_fd);
            self->read_fd = -1;
        }
        self->read_offset = 0;
    }
}

int64_t drv_wal_last(const drv_wal_t *self)
{
    return self->last;
}

int64_t drv_wal_found_records(const drv_wal_t *self)
{
    return self->found_records;
}

int64_t drv_wal_bytes(const drv_wal_t *self)
{
    return self->bytes;
}

drv_wal_damage_t drv_wal_damage(const drv_wal_t *self)
{
    return self->damage;
}

const char *drv_wal_notes(const drv_wal_t *self)
{
    return self->notes;
}

int drv_wal_dir_fd(const drv_wal_t *self)
{
    return self->dir_fd;
}
