/*  drv_tail — see the header. This file: the files followed, and reading
    them; drv_tail_scan.c finds them. */
#include "drv_tail_internal.h"

#include "drv_wal.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_BYTES (64 * 1024)
#define SKIP_BYTES_PER_PEEK (4 * 1024 * 1024) // of a cut line's rest: the loop gets back to its heartbeats
#define SAVES_PER_CALL 256                    // checkpoints written by one drv_tail_save, at most
#define SAVE_BUDGET_US 20000                  // and for at most this long

drv_tail_t *drv_tail_new(const drv_tail_config_t *config, void (*forget)(void *user), char *err, size_t errlen)
{
    drv_tail_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    self->config = *config;
    self->config.include = json_incref((json_t *)config->include);
    self->config.exclude = json_incref((json_t *)config->exclude);
    snprintf(self->dir, sizeof self->dir, "%s", config->checkpoint_dir);
    self->config.checkpoint_dir = self->dir;
    self->forget = forget;
    self->started_before = drv_checkpoint_started(self->dir);
    self->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    self->member_fd = -1;
    drv_tail_watch(self);
    return self;
}

//  A fingerprint taken of fewer bytes than it may cover (the file was
//  short, or empty, when first seen) covers more once the file grew: a
//  checkpoint saved must name the file by as much of it as it can, or a
//  restart could not tell it is the same. False when the bytes it did
//  cover are not what they were (cut and written again).
static bool s_fingerprint_grown(file_t *file, int64_t size)
{
    size_t bytes = file->fp_bytes;
    if (bytes > 0 && drv_tail_fingerprint(file->fd, &bytes) != file->fp && bytes == file->fp_bytes) {
        return false;
    }
    if (file->fp_bytes < DRV_TAIL_FINGERPRINT_BYTES && size > (int64_t)file->fp_bytes) {
        bytes = 0;
        file->fp = drv_tail_fingerprint(file->fd, &bytes);
        file->fp_bytes = (uint32_t)bytes;
        file->dirty = true;
    }
    return true;
}

int drv_tail_save_file(drv_tail_t *self, file_t *file)
{
    struct stat st;
    if (fstat(file->fd, &st) == 0) {
        s_fingerprint_grown(file, (int64_t)st.st_size); // changed bytes: drv_tail_check reads it again
    }
    drv_checkpoint_t checkpoint = {.dev = file->pub.dev,
                                   .ino = file->pub.ino,
                                   .fingerprint_bytes = file->fp_bytes,
                                   .fingerprint = file->fp,
                                   .offset = file->settled};
    snprintf(checkpoint.path, sizeof checkpoint.path, "%s", file->path);
    snprintf(checkpoint.origin, sizeof checkpoint.origin, "%s", file->origin);
    char err[300];
    if (drv_checkpoint_save(self->dir, &checkpoint, err, sizeof err) != 0) {
        drv_warn("checkpoint not saved path=%s reason=\"%s\"", file->path, err);
        return -1;
    }
    file->dirty = false;
    return 0;
}

static void s_free(drv_tail_t *self, file_t *file)
{
    if (self->forget && file->pub.user) {
        self->forget(file->pub.user);
    }
    if (file->fd >= 0) {
        close(file->fd);
    }
    if (file->lock_fd >= 0) {
        close(file->lock_fd);
    }
    free(file->buf);
    free(file);
}

void drv_tail_destroy(drv_tail_t **self_p)
{
    drv_tail_t *self = *self_p;
    if (!self) {
        return;
    }
    for (size_t i = 0; i < self->count; i++) {
        if (self->files[i]->dirty) {
            drv_tail_save_file(self, self->files[i]);
        }
        s_free(self, self->files[i]);
    }
    free(self->files);
    free(self->views);
    drv_tail_index_fini(&self->index);
    drv_tail_index_fini(&self->by_path);
    for (size_t i = 0; i < self->watched_cap; i++) {
        free(self->watched[i]);
    }
    free(self->watched);
    if (self->inotify_fd >= 0) {
        close(self->inotify_fd);
    }
    if (self->member_fd >= 0) {
        close(self->member_fd);
    }
    json_decref((json_t *)self->config.include);
    json_decref((json_t *)self->config.exclude);
    free(self);
    *self_p = NULL;
}

drv_tail_file_t **drv_tail_files(drv_tail_t *self, size_t *n)
{
    if (self->views_cap < self->count) {
        free(self->views);
        self->views = malloc(self->count * sizeof *self->views);
        self->views_cap = self->views ? self->count : 0;
    }
    *n = self->views ? self->count : 0;
    for (size_t i = 0; i < *n; i++) {
        self->views[i] = &self->files[i]->pub;
    }
    return self->views;
}

//  ---------------------------------------------------------------- identity

uint32_t drv_tail_fingerprint(int fd, size_t *bytes)
{
    char head[DRV_TAIL_FINGERPRINT_BYTES];
    size_t want = *bytes && *bytes < sizeof head ? *bytes : sizeof head;
    ssize_t got = pread(fd, head, want, 0);
    *bytes = got > 0 ? (size_t)got : 0;
    return drv_crc32c(0, head, *bytes);
}

//  The file is read again from its start: it was cut shorter than what was
//  read (copytruncate), or its first bytes are not what they were.
static void s_restart(file_t *file, const char *why)
{
    drv_info("file read again from its start path=%s reason=\"%s\"", file->path, why);
    file->pub.epoch++;
    file->pub.offset = file->settled = file->dropped_to = 0;
    file->pub.at_end = false;
    file->pub.quiet = false;
    file->len = 0;
    file->skipping = false;
    file->dirty = true;
    size_t bytes = 0;
    file->fp = drv_tail_fingerprint(file->fd, &bytes);
    file->fp_bytes = (uint32_t)bytes;
}

void drv_tail_check(file_t *file, const struct stat *seen)
{
    struct stat st;
    if (seen) {
        st = *seen;
    } else if (fstat(file->fd, &st) != 0) {
        return;
    }
    //  Unchanged since the last look (size, times, links): nothing to read
    //  again, and no first bytes to compare (an idle file costs no read).
    if (st.st_size == file->checked.st_size && st.st_mtim.tv_sec == file->checked.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == file->checked.st_mtim.tv_nsec && st.st_ctim.tv_sec == file->checked.st_ctim.tv_sec &&
        st.st_ctim.tv_nsec == file->checked.st_ctim.tv_nsec && st.st_nlink == file->checked.st_nlink) {
        return;
    }
    file->checked = st;
    if (st.st_nlink == 0 && !file->pub.gone) {
        file->pub.gone = true; // deleted: read to its end
    }
    if (file->pub.gone || (int64_t)st.st_size != file->pub.offset + (int64_t)file->len) {
        file->pub.quiet = false; // grown (no inotify where it lives), cut, or gone
    }
    if ((int64_t)st.st_size < file->pub.offset + (int64_t)file->len) {
        char why[200];
        snprintf(why, sizeof why, "it is shorter (%lld bytes) than what was read (%lld)", (long long)st.st_size,
                 (long long)(file->pub.offset + (int64_t)file->len));
        s_restart(file, why);
        return;
    }
    if (!s_fingerprint_grown(file, (int64_t)st.st_size)) {
        s_restart(file, "its first bytes changed");
    }
}

//  ---------------------------------------------------------------- reading

//  Reads more after what the buffer holds: bytes read (0: at its end).
static size_t s_fill(drv_tail_t *self, file_t *file)
{
    size_t limit = self->config.max_line_bytes + READ_BYTES;
    file->pub.full = file->len >= limit;
    if (file->cap - file->len < READ_BYTES && file->cap < limit) {
        size_t cap = file->cap ? file->cap * 2 : READ_BYTES * 2;
        cap = cap > limit ? limit : cap;
        char *grown = realloc(file->buf, cap);
        if (!grown) {
            return 0;
        }
        file->buf = grown;
        file->cap = cap;
    }
    if (file->cap == file->len) {
        return 0;
    }
    ssize_t got = pread(file->fd, file->buf + file->len, file->cap - file->len, file->pub.offset + (off_t)file->len);
    if (got < 0) {
        drv_warn("file read failed path=%s reason=\"%s\"", file->path, strerror(errno));
        got = 0;
    }
    file->len += (size_t)got;
    file->pub.at_end = got == 0;
    file->pub.full = file->len >= limit;
    return (size_t)got;
}

//  The buffer's first bytes dropped up to end (past the buffer when it is
//  empty: a hole skipped).
static void s_advance(file_t *file, int64_t end)
{
    size_t gone = (size_t)(end - file->pub.offset);
    if (gone < file->len) {
        memmove(file->buf, file->buf + gone, file->len - gone);
        file->len -= gone;
    } else {
        file->len = 0;
    }
    file->pub.offset = end;
    file->pub.full = false;
}

//  Skipping a cut line's rest, an empty buffer stands before a hole (the
//  sparse start a writer without O_APPEND leaves after a copytruncate):
//  its zeros hold no newline, so it is passed without reading it.
static void s_past_hole(drv_tail_t *self, file_t *file)
{
    off_t data = lseek(file->fd, file->pub.offset, SEEK_DATA);
    if (data < 0 && errno == ENXIO) { // a hole to the end
        struct stat st;
        data = fstat(file->fd, &st) == 0 ? st.st_size : -1;
    }
    if (data > file->pub.offset) {
        s_advance(file, data);
        drv_tail_drop(self, &file->pub, data);
    }
}

//  Drops what remains of a line that was cut, up to its newline: at most
//  SKIP_BYTES_PER_PEEK a call, where the drop is settled as it goes, so that a
//  newline-less stretch of gigabytes neither stalls the loop nor is read
//  again from its start after a restart.
static void s_skip(drv_tail_t *self, file_t *file)
{
    size_t budget = SKIP_BYTES_PER_PEEK;
    while (file->skipping && budget > 0) {
        if (file->len == 0) {
            s_past_hole(self, file);
            if (s_fill(self, file) == 0) {
                return; // the rest has not come yet
            }
        }
        char *nl = memchr(file->buf, '\n', file->len);
        size_t drop = nl ? (size_t)(nl - file->buf) + 1 : file->len;
        budget = drop >= budget ? 0 : budget - drop;
        drv_tail_drop(self, &file->pub, file->pub.offset + (int64_t)drop);
        file->skipping = !nl;
    }
}

size_t drv_tail_peek(drv_tail_t *self, drv_tail_file_t *view, drv_tail_line_t *lines, size_t max, bool more)
{
    file_t *file = (file_t *)view;
    size_t max_line = self->config.max_line_bytes;
    if (file->releasing) {
        return 0;
    }
    s_skip(self, file);
    if (file->skipping) {
        return 0;
    }
    file->skip_after = false;
    while (file->len < READ_BYTES && s_fill(self, file) > 0) { // an input's worth of lines when there are
    }
    //  What was given held no whole message (containerd's 16 KiB pieces of
    //  a long line, a long stack trace): a read's worth more, up to the
    //  bound, at which the caller cuts the message.
    for (size_t had = file->len; more && file->len < had + READ_BYTES && s_fill(self, file) > 0;) {
    }
    if (!file->buf) {
        return 0; // out of memory for a buffer: tried again later
    }
    size_t n = 0, at = 0;
    while (n < max) {
        char *nl = memchr(file->buf + at, '\n', file->len - at);
        size_t rest = file->len - at;
        if (nl) {
            size_t len = (size_t)(nl - (file->buf + at));
            lines[n++] = (drv_tail_line_t){.data = file->buf + at,
                                           .len = len > max_line ? max_line : len,
                                           .end = file->pub.offset + (int64_t)(at + len + 1),
                                           .cut = len > max_line};
            at += len + 1;
            continue;
        }
        if (rest >= max_line) { // no newline in max_line_bytes: cut here, the rest dropped up to its newline
            lines[n++] = (drv_tail_line_t){
                .data = file->buf + at, .len = max_line, .end = file->pub.offset + (int64_t)file->len, .cut = true};
            file->skip_after = true;
            break;
        }
        //  Nothing whole is left: read more, but not under lines given (they
        //  point into the buffer; whether the file has more is looked up).
        if (n > 0) {
            struct stat st;
            file->pub.at_end = fstat(file->fd, &st) == 0 && st.st_size <= file->pub.offset + (off_t)file->len;
            break;
        }
        if (s_fill(self, file) > 0) {
            continue;
        }
        bool last = file->pub.gone && drv_time_mono_ms() - file->gone_since_ms >= DRV_TAIL_ROTATE_WAIT_MS;
        if (rest > 0 && last) { // a file gone ends with a line without its newline
            lines[n++] =
                (drv_tail_line_t){.data = file->buf + at, .len = rest, .end = file->pub.offset + (int64_t)file->len};
        }
        break;
    }
    //  Nothing held and nothing more: quiet until an event or a scan says
    //  it changed (thousands of idle files cost no read each turn).
    file->pub.quiet = n == 0 && file->len == 0 && file->pub.at_end && !file->pub.gone && !file->skipping;
    return n;
}

void drv_tail_take(drv_tail_t *self, drv_tail_file_t *view, int64_t end)
{
    (void)self;
    file_t *file = (file_t *)view;
    int64_t peeked = file->pub.offset + (int64_t)file->len;
    s_advance(file, end < peeked ? end : peeked);
    if (file->skip_after && file->len == 0) {
        file->skip_after = false;
        file->skipping = true; // the rest of the cut line, when it comes
    }
    if (file->len == 0 && file->pub.at_end) { // all taken and nothing more for now: a quiet file holds no buffer
        free(file->buf);
        file->buf = NULL;
        file->cap = 0;
    }
}

//  Bytes dropped in no input are settled once every input before them is:
//  then nothing before them can be read again.
static void s_settle_dropped(file_t *file)
{
    if (file->pub.unsettled == 0 && file->dropped_to > file->settled) {
        file->settled = file->dropped_to;
        file->dirty = true;
    }
}

void drv_tail_drop(drv_tail_t *self, drv_tail_file_t *view, int64_t end)
{
    file_t *file = (file_t *)view;
    drv_tail_take(self, view, end);
    file->dropped_to = file->pub.offset;
    s_settle_dropped(file);
}

void drv_tail_settled(drv_tail_t *self, drv_tail_file_t *view, uint32_t epoch, int64_t end)
{
    (void)self;
    file_t *file = (file_t *)view;
    if (epoch != file->pub.epoch) {
        return;
    }
    if (end > file->settled) {
        file->settled = end;
        file->dirty = true;
    }
    s_settle_dropped(file);
}

bool drv_tail_save(drv_tail_t *self, int64_t now_ms)
{
    size_t saves = 0;
    int64_t began = drv_time_mono_us();
    for (size_t i = 0; i < self->count;) {
        file_t *file = self->files[i];
        //  One another instance's now is handed over, never forgotten: what
        //  was written to it since it was last read (a writer late after a
        //  rename) is the next reader's.
        bool done = !file->releasing && file->pub.gone && file->pub.at_end && file->len == 0 &&
                    file->pub.unsettled == 0 && now_ms - file->gone_since_ms >= DRV_TAIL_ROTATE_WAIT_MS;
        bool handed = file->releasing && file->pub.unsettled == 0;
        if (done || handed) {
            if (done) {
                drv_info("file read to its end and let go path=%s", file->path);
                drv_checkpoint_forget(self->dir, file->pub.dev, file->pub.ino);
            } else {
                drv_tail_save_file(self, file);
                drv_info("file let go to another instance path=%s offset=%lld", file->path, (long long)file->settled);
            }
            drv_tail_index_remove(&self->index, file->pub.dev, file->pub.ino, file);
            drv_tail_index_remove(&self->by_path, drv_tail_index_path(file->path), 0, file);
            s_free(self, file);
            self->files[i] = self->files[--self->count];
            continue;
        }
        if (file->dirty && saves < SAVES_PER_CALL) {
            drv_tail_save_file(self, file);
            saves = drv_time_mono_us() - began > SAVE_BUDGET_US ? SAVES_PER_CALL : saves + 1;
        }
        i++;
    }
    return saves == SAVES_PER_CALL;
}
