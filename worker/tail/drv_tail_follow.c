/*  drv_tail_follow — beginning to follow one file (drv_tail.h): whose it
    is (its identity hashed over the newest generation's instances), its
    lock taken, opened where it must be (docs/security.md: the directory
    the opened descriptor is in decides), and read on from its checkpoint
    when the file is the one the checkpoint names. The scan (globs) and
    the checkpoint pass (drv_tail_checkpoints.c) both begin here. */
#include "drv_tail_internal.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool drv_tail_mine(const drv_tail_t *self, uint64_t dev, uint64_t ino)
{
    uint64_t h = (dev * 0x9E3779B97F4A7C15ull) ^ (ino * 0xC2B2AE3D27D4EB4Full);
    h ^= h >> 29;
    return self->members > 0 && (self->members == 1 || (int)(h % (uint64_t)self->members) == self->rank);
}

static bool s_matches(const json_t *globs, const char *path)
{
    size_t i;
    json_t *glob_;
    json_array_foreach((json_t *)globs, i, glob_)
    {
        if (fnmatch(json_string_value(glob_), path, FNM_PATHNAME) == 0) {
            return true;
        }
    }
    return false;
}

bool drv_tail_globbed(const drv_tail_t *self, const char *path)
{
    return s_matches(self->config.include, path) && !s_matches(self->config.exclude, path);
}

bool drv_tail_excluded(const drv_tail_t *self, const char *path)
{
    return s_matches(self->config.exclude, path);
}

bool drv_tail_expected_dir(const char *pattern, const char *path, char *out, size_t len)
{
    char fixed[4096], dir[4096], real[PATH_MAX];
    drv_tail_fixed_dir(pattern, fixed, sizeof fixed);
    drv_tail_dirname(path, dir, sizeof dir);
    size_t prefix = strlen(fixed);
    if (strncmp(dir, fixed, prefix) != 0 || !realpath(fixed, real)) {
        return false;
    }
    const char *rest = dir + prefix;
    bool root = !strcmp(real, "/");
    return (size_t)snprintf(out, len, "%s%s", root && rest[0] == '/' ? "" : real, rest) < len;
}

bool drv_tail_where(const drv_tail_t *self, const char *path, char *dir, size_t len)
{
    if (s_matches(self->config.exclude, path)) {
        return false;
    }
    size_t i;
    json_t *glob_;
    json_array_foreach((json_t *)self->config.include, i, glob_)
    {
        const char *pattern = json_string_value(glob_);
        if (fnmatch(pattern, path, FNM_PATHNAME) == 0 && drv_tail_expected_dir(pattern, path, dir, len)) {
            return true;
        }
    }
    return false;
}

file_t *drv_tail_known(drv_tail_t *self, uint64_t dev, uint64_t ino)
{
    return drv_tail_index_get(&self->index, dev, ino);
}

//  True when the file opened as fd is in directory dir (a real path).
static bool s_opened_in(int fd, const char *dir)
{
    char link[64], real[PATH_MAX + 1];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t got = readlink(link, real, sizeof real - 1);
    if (got <= 0 || (size_t)got >= sizeof real - 1) {
        return false;
    }
    real[got] = 0;
    char *slash = strrchr(real, '/');
    if (!slash) {
        return false;
    }
    *slash = 0;
    return !strcmp(real[0] ? real : "/", dir);
}

//  Opened where it must be and still the file stat'd: its descriptor, or -1.
static int s_open(const char *path, uint64_t dev, uint64_t ino, const char *in_dir, bool link, struct stat *now)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (link ? 0 : O_NOFOLLOW));
    if (fd >= 0 && fstat(fd, now) == 0 && (uint64_t)now->st_dev == dev && (uint64_t)now->st_ino == ino &&
        S_ISREG(now->st_mode) && (!in_dir || s_opened_in(fd, in_dir))) {
        return fd;
    }
    if (fd >= 0) {
        close(fd);
    } else if (errno != ENOENT && errno != ELOOP) {
        drv_warn("file not readable path=%s reason=\"%s\"", path, strerror(errno));
    }
    return -1;
}

//  A file record for the file opened, indexed by identity and path: NULL when out of memory.
static file_t *s_add(drv_tail_t *self, const char *path, uint64_t dev, uint64_t ino)
{
    if (self->count == self->cap) {
        size_t cap = self->cap ? self->cap * 2 : 16;
        file_t **grown = realloc(self->files, cap * sizeof *grown);
        if (!grown) {
            return NULL;
        }
        self->files = grown;
        self->cap = cap;
    }
    file_t *file = calloc(1, sizeof *file);
    if (!file || drv_tail_index_put(&self->index, dev, ino, file) != 0 ||
        drv_tail_index_put(&self->by_path, drv_tail_index_path(path), 0, file) != 0) {
        if (file) {
            drv_tail_index_remove(&self->index, dev, ino, file);
        }
        free(file);
        return NULL;
    }
    self->files[self->count++] = file;
    return file;
}

//  Where reading begins: its checkpoint's offset when it names this file
//  (its origin taken too), else its start, or its end at the pipeline's
//  first start with start_at end. What the log says of it.
static const char *s_from(drv_tail_t *self, file_t *file, int64_t size)
{
    drv_checkpoint_t checkpoint;
    if (drv_checkpoint_load(self->dir, file->pub.dev, file->pub.ino, &checkpoint)) {
        //  A fingerprint of no bytes (the file was empty when it was taken)
        //  tells nothing either way: the offset alone must fit.
        size_t before = checkpoint.fingerprint_bytes;
        uint32_t fp = before ? drv_tail_fingerprint(file->fd, &before) : checkpoint.fingerprint;
        if (before == checkpoint.fingerprint_bytes && fp == checkpoint.fingerprint && checkpoint.offset <= size) {
            file->pub.offset = checkpoint.offset;
            snprintf(file->origin, sizeof file->origin, "%s", checkpoint.origin);
            return "its checkpoint";
        }
    } else if (!self->started_before && !self->config.start_at_beginning) {
        file->pub.offset = size;
        return "its end (start_at: end)";
    }
    return "its start";
}

drv_tail_follow_t drv_tail_follow(drv_tail_t *self, const char *path, const struct stat *st, bool gone,
                                  const char *in_dir, bool link, const char *origin)
{
    uint64_t dev = (uint64_t)st->st_dev, ino = (uint64_t)st->st_ino;
    int lock = drv_checkpoint_lock(self->dir, dev, ino);
    if (lock < 0) {
        return DRV_TAIL_BUSY; // another instance follows it (a draining generation, another core's)
    }
    struct stat now;
    int fd = s_open(path, dev, ino, in_dir, link, &now);
    file_t *file = fd >= 0 ? s_add(self, path, dev, ino) : NULL;
    if (!file) {
        if (fd >= 0) {
            close(fd);
        }
        close(lock);
        return DRV_TAIL_NOT;
    }
    self->followed++;
    *file = (file_t){.pub = {.dev = dev, .ino = ino, .gone = gone}, .fd = fd, .lock_fd = lock, .seen = true, .wd = -1};
    snprintf(file->path, sizeof file->path, "%s", path);
    snprintf(file->origin, sizeof file->origin, "%s", origin ? origin : path);
    file->pub.path = file->path;
    file->pub.origin = file->origin;
    const char *slash = strrchr(file->path, '/');
    file->pub.name = slash ? slash + 1 : file->path;
    file->gone_since_ms = gone ? drv_time_mono_ms() : 0;
    size_t bytes = 0;
    file->fp = drv_tail_fingerprint(fd, &bytes);
    file->fp_bytes = (uint32_t)bytes;
    const char *from = s_from(self, file, (int64_t)now.st_size);
    file->settled = file->pub.offset;
    file->dirty = true;
    char dir[4096];
    drv_tail_dirname(path, dir, sizeof dir);
    file->wd =
        drv_tail_watch_dir(self, dir); // its directory too (a glob's may have wildcards): a new neighbour wakes a scan
    drv_tail_save_file(self, file);    // at once: renamed away before the next save, it is found again by it
    if (strcmp(file->origin, path) != 0) {
        drv_info("following file path=%s from=\"%s\" offset=%lld origin=%s", path, from, (long long)file->pub.offset,
                 file->origin);
    } else {
        drv_info("following file path=%s from=\"%s\" offset=%lld", path, from, (long long)file->pub.offset);
    }
    return DRV_TAIL_FOLLOWED;
}
