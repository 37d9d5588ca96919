/*  drv_wal — see drv_wal.h. This file: opening the log as a crash or an
    older drover left it, and closing it (drv_wal_append.c appends and
    settles, drv_wal_sync.c makes it durable, drv_wal_read.c reads entries
    back). Segments are kept oldest first; the newest is the one appended
    to; segments found at open are never appended to. */
#include "drv_wal_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int drv_wal_push(drv_wal_t *self, const segment_t *segment)
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

//  A segment's name: {first:020}.log, or .wal (written before segments
//  were recycled). -1 for any other name.
static int s_first_of(const char *name, int64_t *first, bool *old_format)
{
    char *end = NULL;
    long long n = strtoll(name, &end, 10);
    if (end == name || n < 0 || (strcmp(end, ".log") != 0 && strcmp(end, ".wal") != 0)) {
        return -1;
    }
    *first = n;
    *old_format = strcmp(end, ".wal") == 0;
    return 0;
}

static int s_by_first(const void *a, const void *b)
{
    int64_t x = ((const segment_t *)a)->first, y = ((const segment_t *)b)->first;
    return x < y ? -1 : x > y;
}

static void s_remove(drv_wal_t *self, size_t index)
{
    memmove(&self->segments[index], &self->segments[index + 1], (self->count - index - 1) * sizeof *self->segments);
    self->count--;
}

//  The newest segment found: read through to find its last entry. An old
//  format segment ends at its file's end, and a torn or bad entry before
//  it is damage; a recycled one ends where the entries stop following on
//  from its name's number, and only an entry numbered as the next one that
//  is not whole is a torn write (a crash mid-write): what follows is a
//  spare's older entries, or nothing written yet. A torn end is cut into
//  quarantine. *read_from: where the first entry past the settled mark starts.
static int s_check_newest(drv_wal_t *self, segment_t *segment, int64_t *read_from, char *err, size_t errlen)
{
    int fd = drv_wal_open_segment(self, segment, O_RDONLY);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", segment->path, strerror(errno));
        return -1;
    }
    int64_t offset = 0, expect = segment->first, size = segment->bytes;
    drv_wal_entry_t entry;
    drv_wal_found_t what;
    *read_from = -1;
    while ((what = drv_wal_entry_at(&self->buf, fd, offset, size, &entry)) == ENTRY_OK) {
        if (!segment->old_format && entry.number != expect) {
            self->bytes -= segment->bytes - offset; // the spare's older entries: not this segment's
            segment->bytes = offset;
            what = ENTRY_END;
            break;
        }
        if (*read_from < 0 && entry.number > self->mark) {
            *read_from = offset;
        }
        segment->last = entry.number;
        segment->records += entry.number > self->mark ? entry.records : 0;
        offset += HEADER + (int64_t)entry.len;
        expect = entry.number + 1;
    }
    bool torn = what == ENTRY_TORN, bad = what == ENTRY_BAD;
    if (!segment->old_format && (torn || bad)) {
        //  Past a recycled segment's end lie a spare's older entries or
        //  nothing: only an entry numbered as the next is torn (or one cut
        //  short by the file's end, where nothing was made ahead), and it
        //  spans its own length at most. When entries numbered on follow
        //  it, no crash made it: it is damage, and so are they.
        int64_t number = -1, next, end;
        uint32_t len = 0, next_len, records;
        drv_wal_header_at(fd, offset, size, &number, &len, &records); // fills number and len when a header is there
        end = offset + HEADER + (int64_t)len;
        bad = len <= MAX_ENTRY && drv_wal_header_at(fd, end, size, &next, &next_len, &records) && next == expect + 1;
        for (int64_t want = expect + 1;
             bad && drv_wal_header_at(fd, end, size, &next, &next_len, &records) && next == want; want++) {
            end += HEADER + (int64_t)next_len;
        }
        torn = !bad && (size - offset < HEADER || (number == expect && len <= MAX_ENTRY));
        end = end < size ? end : size;
        self->bytes -= segment->bytes - (torn || bad ? end : offset);
        segment->bytes = torn || bad ? end : offset;
    }
    close(fd);
    if (*read_from < 0) {
        *read_from = offset;
    }
    if (what == ENTRY_ERROR) {
        snprintf(err, errlen, "cannot read %s: %s", segment->path, strerror(errno ? errno : ENOMEM));
        return -1;
    }
    if (!torn && !bad) {
        return 0;
    }
    if (torn) {
        self->damage.torn_bytes += segment->bytes - offset;
    } else {
        self->damage.corrupt_segments++;
        self->damage.corrupt_bytes += segment->bytes - offset;
    }
    return drv_wal_cut(self, segment, offset, torn ? "torn" : "bad", err, errlen);
}

//  An older recycled segment: its entries from its start while they follow
//  on, up to the next segment's first (their checksums are checked as they
//  are read). 0, or -1 when its first entry is whole and numbered past its
//  name: a spare written over when the crash came, its rename lost (a
//  number damaged would fail its checksum: reading finds that).
static int s_walk(drv_wal_t *self, segment_t *segment, int64_t until)
{
    int fd = drv_wal_open_segment(self, segment, O_RDONLY);
    int64_t at = 0, number = -1, expect = segment->first, size = segment->bytes;
    uint32_t len, records;
    drv_wal_entry_t entry;
    if (fd >= 0 && drv_wal_entry_at(&self->buf, fd, 0, size, &entry) == ENTRY_OK && entry.number > segment->first) {
        close(fd); // whole and numbered past its name: written over after a rename the crash lost
        return -1;
    }
    while (fd >= 0 && expect <= until && drv_wal_header_at(fd, at, size, &number, &len, &records) && number == expect) {
        segment->records += number > self->mark ? records : 0;
        at += HEADER + (int64_t)len;
        expect++;
    }
    if (fd >= 0) {
        close(fd);
    }
    if (expect > until) { // whole up to the next segment: what follows is a spare's older entries
        self->bytes -= segment->bytes - at;
        segment->bytes = at;
    } // else entries are missing: reading finds the damage at at and cuts it into quarantine
    return 0;
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
        bool spare = strncmp(e->d_name, SPARE_PREFIX, strlen(SPARE_PREFIX)) == 0;
        if ((!spare && s_first_of(e->d_name, &segment.first, &segment.old_format) != 0) ||
            strlen(e->d_name) >= sizeof segment.name) {
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
        if (spare) {
            drv_wal_spare_found(self, e->d_name);
            continue;
        }
        snprintf(segment.name, sizeof segment.name, "%s", e->d_name);
        snprintf(segment.path, sizeof segment.path, "%s/%s", self->dir, e->d_name);
        segment.bytes = st.st_size;
        if (drv_wal_push(self, &segment) != 0) {
            snprintf(err, errlen, "cannot read %s: out of memory", segment.path);
            closedir(d);
            return -1;
        }
    }
    closedir(d);
    if (self->count > 1) {
        qsort(self->segments, self->count, sizeof *self->segments, s_by_first);
    }
    for (size_t i = 0; i < self->count; i++) {
        self->bytes += self->segments[i].bytes; // a cut or a walk below takes its part off
    }
    return 0;
}

//  What was found, made a log: older segments walked (and counted), the
//  newest checked; segments that are spares by their content, and older
//  ones wholly settled by the mark, become spares; reading starts past the
//  mark.
static int s_recover(drv_wal_t *self, char *err, size_t errlen)
{
    for (size_t i = 0; i + 1 < self->count;) {
        segment_t *segment = &self->segments[i];
        segment->last = self->segments[i + 1].first - 1;
        if (segment->old_format) {
            segment->records = drv_wal_count_records(self, segment, self->mark);
        } else if (s_walk(self, segment, segment->last) != 0) {
            self->bytes -= segment->bytes;
            drv_wal_spare_found(self, segment->name);
            s_remove(self, i);
            continue;
        }
        if (segment->last <= self->mark) { // settled before the crash; its rename to a spare was lost
            self->bytes -= segment->bytes;
            drv_wal_spare_return(self, segment);
            s_remove(self, i);
            continue;
        }
        i++;
    }
    int64_t read_from = 0;
    if (self->count > 0) {
        segment_t *newest = &self->segments[self->count - 1];
        newest->last = newest->first - 1;
        if (s_check_newest(self, newest, &read_from, err, errlen) != 0) {
            return -1;
        }
        //  Numbers go on after it, and after its name (entries numbered below
        //  the name they are filed under are damage, but the next segment's
        //  name must still be free).
        int64_t after = newest->last > newest->first ? newest->last : newest->first;
        if (newest->bytes == 0) { // nothing whole in it (a crash right after it was made): a spare
            drv_wal_spare_found(self, newest->name);
            self->count--;
            read_from = 0;
            after = newest->first - 1;
        }
        self->last = after > self->last ? after : self->last;
    }
    self->last = self->mark > self->last ? self->mark : self->last;
    self->read_last = self->mark;
    for (size_t i = 0; i < self->count; i++) {
        self->found_records += self->segments[i].records;
    }
    if (self->count == 1 && read_from > 0) { // the newest alone, settled up to read_from
        self->read_offset = read_from;
        self->segments[0].settled_bytes = read_from;
        self->bytes -= read_from;
    }
    return 0;
}

drv_wal_t *drv_wal_open(const char *dir, const char *quarantine_dir, size_t segment_bytes, char *err, size_t errlen)
{
    drv_wal_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    self->offset_of_number = -1;
    snprintf(self->dir, sizeof self->dir, "%s", dir);
    snprintf(self->quarantine, sizeof self->quarantine, "%s", quarantine_dir);
    self->segment_bytes = segment_bytes;
    self->fd = self->ended_fd = self->read_fd = self->dir_fd = self->quarantine_fd = self->mark_fd = -1;
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
    if (drv_wal_mark_open(self, err, errlen) != 0 || s_list(self, err, errlen) != 0 ||
        s_recover(self, err, errlen) != 0) {
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
    segment_t *newest = self->count ? &self->segments[self->count - 1] : NULL;
    if (self->count == 1 && newest->bytes > 0 && newest->settled_bytes == newest->bytes && !self->dirty &&
        self->ended_fd < 0) {
        drv_wal_spare_return(self, newest); // all of it settled: nothing is left behind for a restart to look at
    }
    for (size_t i = 0; i < self->doomed_count; i++) {
        unlinkat(self->dir_fd, self->doomed[i], 0);
    }
    if (self->count == 0 && self->dir_fd >= 0) {
        //  Nothing left: the slot keeps no spares for an instance that may
        //  never come (a replace's next generation runs in another slot, a
        //  deleted pipeline in none), and without them numbering may start
        //  again from 1, so the mark goes too.
        for (size_t i = 0; i < self->spare_count; i++) {
            unlinkat(self->dir_fd, self->spares[i], 0);
        }
        unlinkat(self->dir_fd, MARK_NAME, 0);
        self->mark_dirty = false;
    }
    if (self->mark_dirty && self->mark_fd >= 0) {
        fdatasync(self->mark_fd);
    }
    int fds[] = {self->fd, self->ended_fd, self->read_fd, self->dir_fd, self->quarantine_fd, self->mark_fd};
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    free(self->segments);
    free(self->spares);
    free(self->doomed);
    free(self->buf.data);
    free(self);
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
