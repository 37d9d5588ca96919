/*  drv_wal_quarantine — what the log cannot use is moved out of its way
    (drv_wal.h): the damaged end of a segment is copied into the quarantine
    directory before the segment is cut; something named like a segment
    that is not a regular file is renamed there, never opened.

    Both are best effort by design: the log must start whatever the disk
    holds. A copy that does not fit (no room, no quarantine directory) is
    removed again and the segment cut anyway, counted as unkept; a name
    that cannot be moved stays where it is and is skipped. Nothing here
    follows a link: the quarantine directory is opened with O_NOFOLLOW and
    each file in it is created with O_EXCL (docs/security.md). */
#include "drv_wal_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME_TRIES 100

//  The quarantine directory, created if need be: its descriptor, or -1.
static int s_quarantine(drv_wal_t *self)
{
    if (self->quarantine_fd == -1) {
        if (mkdir(self->quarantine, 0700) != 0 && errno != EEXIST) {
            self->quarantine_fd = -2;
            return -1;
        }
        int fd = open(self->quarantine, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        self->quarantine_fd = fd >= 0 ? fd : -2;
    }
    return self->quarantine_fd >= 0 ? self->quarantine_fd : -1;
}

static void s_note(drv_wal_t *self, const char *fmt, const char *a, const char *b, const char *c)
{
    size_t used = strlen(self->notes);
    if (used + 2 < sizeof self->notes) {
        snprintf(self->notes + used, sizeof self->notes - used, used ? "; " : "");
        used = strlen(self->notes);
        snprintf(self->notes + used, sizeof self->notes - used, fmt, a, b, c);
    }
}

//  A new file in quarantine named prefix-name (or prefix-name.N when taken):
//  its descriptor, its name in out; -1 when none can be made.
static int s_create_kept(drv_wal_t *self, const char *prefix, const char *name, char *out, size_t size)
{
    int dir = s_quarantine(self);
    for (int n = 0; dir >= 0 && n < NAME_TRIES; n++) {
        if (n == 0) {
            snprintf(out, size, "%s-%s", prefix, name);
        } else {
            snprintf(out, size, "%s-%s.%d", prefix, name, n);
        }
        int fd = openat(dir, out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST) {
            return fd;
        }
    }
    return -1;
}

//  Copies the bytes of in from offset to its end into a new quarantine file:
//  0, or -1 with nothing left behind in quarantine.
static int s_keep(drv_wal_t *self, int in, const segment_t *segment, int64_t offset, const char *prefix)
{
    char name[96];
    int out = s_create_kept(self, prefix, segment->name, name, sizeof name);
    if (out < 0) {
        return -1;
    }
    int rc = 0;
    char chunk[65536];
    for (int64_t at = offset; rc == 0 && at < segment->bytes;) {
        size_t n = segment->bytes - at < (int64_t)sizeof chunk ? (size_t)(segment->bytes - at) : sizeof chunk;
        if (drv_wal_pread(in, chunk, n, at) != 1 || write(out, chunk, n) != (ssize_t)n) {
            rc = -1;
        }
        at += (int64_t)n;
    }
    //  Kept (synced) before the segment is cut: a crash between the two leaves both copies.
    if (rc != 0 || fdatasync(out) != 0) {
        rc = -1;
        unlinkat(self->quarantine_fd, name, 0);
    }
    close(out);
    return rc;
}

int drv_wal_cut(drv_wal_t *self, segment_t *segment, int64_t offset, const char *prefix, char *err, size_t errlen)
{
    int in = drv_wal_open_segment(self, segment, O_RDWR);
    if (in < 0) {
        snprintf(err, errlen, "cannot open %s to cut its damaged end: %s", segment->path, strerror(errno));
        return -1;
    }
    bool kept = s_keep(self, in, segment, offset, prefix) == 0;
    if (ftruncate(in, (off_t)offset) != 0 || fdatasync(in) != 0) {
        snprintf(err, errlen, "cannot cut the damaged end of %s: %s", segment->path, strerror(errno));
        close(in);
        return -1;
    }
    close(in);
    if (!kept) {
        self->damage.unkept_bytes += segment->bytes - offset;
    }
    self->bytes -= segment->bytes - offset;
    segment->bytes = offset;
    return 0;
}

void drv_wal_set_aside(drv_wal_t *self, const char *name, const char *what)
{
    self->damage.odd_files++;
    int dir = s_quarantine(self);
    char target[96];
    for (int n = 0; dir >= 0 && n < NAME_TRIES; n++) {
        if (n == 0) {
            snprintf(target, sizeof target, "odd-%s", name);
        } else {
            snprintf(target, sizeof target, "odd-%s.%d", name, n);
        }
        if (renameat2(self->dir_fd, name, dir, target, RENAME_NOREPLACE) == 0) {
            s_note(self, "%s is %s: moved to quarantine as %s", name, what, target);
            return;
        }
        if (errno != EEXIST) {
            break;
        }
    }
    s_note(self, "%s is %s: skipped, left where it is (%s)", name, what, strerror(errno));
}
