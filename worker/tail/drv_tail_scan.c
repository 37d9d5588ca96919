/*  drv_tail_scan — finding the files to follow (drv_tail.h): the include
    globs less the exclude ones, regular files only, a link only when its
    glob names it or it points into its own directory. What decides is
    where the file opened is (docs/security.md): the directories a glob's
    wildcards matched must be the ones it was opened in, so neither a
    directory link that glob(3) walked into nor a link flipped between
    the checks and the open exports a file from elsewhere. The files this
    instance owns (its identity hashed over the instances) and whose lock
    it gets; the files it follows that no glob finds any more (gone); and,
    the first time, the files checkpoints name that were renamed away while
    nobody read them, found again in their directory by their identity. */
#include "drv_tail_internal.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

static bool s_wild(const char *text)
{
    return strpbrk(text, "*?[") != NULL;
}

//  The directory part of a path (a copy in out).
static void s_dirname(const char *path, char *out, size_t len)
{
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    snprintf(out, len, "%s", dirname(copy));
}

//  What one scan may begin: each file followed is a lock, an open and a
//  checkpoint written, which on a busy disk take long; the rest waits for
//  the next scan, at once, the loop's heartbeats between.
#define FOLLOWS_PER_SCAN 256
#define FOLLOW_BUDGET_US 20000
#define WATCHED (IN_CREATE | IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE | IN_CLOSE_WRITE)

//  The deepest directory of a glob without a wildcard (into dir).
static void s_fixed_dir(const char *pattern, char *dir, size_t len)
{
    s_dirname(pattern, dir, len);
    char *wild = strpbrk(dir, "*?[");
    if (wild) {
        *wild = 0;
        char *slash = strrchr(dir, '/');
        if (slash) {
            slash[slash == dir] = 0; // "/" stays itself
        }
    }
}

void drv_tail_watch(drv_tail_t *self)
{
    size_t i;
    json_t *glob_;
    json_array_foreach((json_t *)self->config.include, i, glob_)
    {
        //  A file, or a directory on the way to one (a new pod's), appears
        //  in the deepest directory without a wildcard.
        char dir[4096];
        s_fixed_dir(json_string_value(glob_), dir, sizeof dir);
        if (dir[0]) {
            drv_tail_watch_dir(self, dir);
        }
    }
}

int drv_tail_watch_dir(drv_tail_t *self, const char *dir)
{
    int wd = self->inotify_fd >= 0 ? inotify_add_watch(self->inotify_fd, dir, WATCHED) : -1;
    if (wd < 0 || ((size_t)wd < self->watched_cap && self->watched[wd])) {
        return wd; // not watched, or watched already
    }
    if ((size_t)wd >= self->watched_cap) {
        size_t cap = self->watched_cap ? self->watched_cap : 16;
        while (cap <= (size_t)wd) {
            cap *= 2;
        }
        char **grown = realloc(self->watched, cap * sizeof *grown);
        if (!grown) {
            return -1;
        }
        memset(grown + self->watched_cap, 0, (cap - self->watched_cap) * sizeof *grown);
        self->watched = grown;
        self->watched_cap = cap;
    }
    self->watched[wd] = strdup(dir);
    return self->watched[wd] ? wd : -1;
}

//  True while file's directory is watched: an event will name it if it changes.
static bool s_watched(const drv_tail_t *self, const file_t *file)
{
    return file->wd >= 0 && (size_t)file->wd < self->watched_cap && self->watched[file->wd];
}

//  The file followed under a name an event gave: touched (the next scan
//  looks at its name again) and, written to, no longer quiet.
static void s_named(drv_tail_t *self, const struct inotify_event *e)
{
    if (e->wd < 0 || (size_t)e->wd >= self->watched_cap || !self->watched[e->wd]) {
        return;
    }
    if (e->mask & IN_IGNORED) { // the directory went: what it held is looked at by name again
        free(self->watched[e->wd]);
        self->watched[e->wd] = NULL;
        self->events_lost = true;
        return;
    }
    if (e->len == 0) {
        return;
    }
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", self->watched[e->wd], e->name);
    file_t *file = drv_tail_index_get(&self->by_path, drv_tail_index_path(path), 0);
    if (file && !strcmp(file->path, path)) {
        file->touched = true;
        file->pub.quiet = false;
    }
}

int drv_tail_fd(const drv_tail_t *self)
{
    return self->inotify_fd;
}

bool drv_tail_events(drv_tail_t *self)
{
    char events[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    bool appeared = false;
    ssize_t got;
    while (self->inotify_fd >= 0 && (got = read(self->inotify_fd, events, sizeof events)) > 0) {
        for (char *at = events; at < events + got;) {
            const struct inotify_event *e = (const struct inotify_event *)at;
            appeared |= (e->mask & (IN_CREATE | IN_MOVED_TO | IN_Q_OVERFLOW)) != 0;
            s_named(self, e);
            for (size_t i = 0; (e->mask & IN_Q_OVERFLOW) && i < self->count; i++) {
                self->files[i]->pub.quiet = false; // events lost: any may have been written
            }
            self->events_lost |= (e->mask & IN_Q_OVERFLOW) != 0;
            at += sizeof *e + e->len;
        }
    }
    return appeared;
}

//  This instance's files: each file's identity hashed over the newest
//  generation's instances.
static bool s_mine(const drv_tail_t *self, uint64_t dev, uint64_t ino)
{
    uint64_t h = (dev * 0x9E3779B97F4A7C15ull) ^ (ino * 0xC2B2AE3D27D4EB4Full);
    h ^= h >> 29;
    return self->members > 0 && (self->members == 1 || (int)(h % (uint64_t)self->members) == self->rank);
}

//  Which instances read: joins when it has not yet, then its place among them.
static void s_members(drv_tail_t *self)
{
    if (self->member_fd < 0) {
        self->member_fd = drv_checkpoint_join(self->dir, self->config.generation, self->config.core);
    }
    if (self->member_fd < 0 ||
        !drv_checkpoint_rank(self->dir, self->config.generation, self->config.core, &self->rank, &self->members)) {
        self->members = 0; // not (yet) one of the newest generation's: nothing new is read
    }
}

static bool s_excluded(const drv_tail_t *self, const char *path)
{
    size_t i;
    json_t *glob_;
    json_array_foreach((json_t *)self->config.exclude, i, glob_)
    {
        if (fnmatch(json_string_value(glob_), path, FNM_PATHNAME) == 0) {
            return true;
        }
    }
    return false;
}

//  Where path's file must be once opened: the real directory of the glob's
//  part without a wildcard, then the directories its wildcards matched, as
//  they are named (none of them a link). False when that cannot be known.
static bool s_expected_dir(const char *pattern, const char *path, char *out, size_t len)
{
    char fixed[4096], dir[4096], real[PATH_MAX];
    s_fixed_dir(pattern, fixed, sizeof fixed);
    s_dirname(path, dir, sizeof dir);
    size_t prefix = strlen(fixed);
    if (strncmp(dir, fixed, prefix) != 0 || !realpath(fixed, real)) {
        return false;
    }
    const char *rest = dir + prefix;
    bool root = !strcmp(real, "/");
    return (size_t)snprintf(out, len, "%s%s", root && rest[0] == '/' ? "" : real, rest) < len;
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

static file_t *s_known(drv_tail_t *self, uint64_t dev, uint64_t ino)
{
    return drv_tail_index_get(&self->index, dev, ino);
}

//  Starts following path (st: its stat) when its lock is ours: from its
//  checkpoint when the file is the one it names, else from its start (or
//  its end, at the pipeline's first start with start_at end). gone: no
//  glob finds it (renamed away while nobody read it). in_dir: the real
//  directory the file must be opened in (NULL: anywhere, a link its glob
//  names); link: path is a link allowed (else one is not followed).
static void s_follow(drv_tail_t *self, const char *path, const struct stat *st, bool gone, const char *in_dir,
                     bool link)
{
    uint64_t dev = (uint64_t)st->st_dev, ino = (uint64_t)st->st_ino;
    int lock = drv_checkpoint_lock(self->dir, dev, ino);
    if (lock < 0) {
        return; // another instance follows it (a draining generation, another core's): tried again next scan
    }
    struct stat now;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (link ? 0 : O_NOFOLLOW));
    if (fd < 0 || fstat(fd, &now) != 0 || (uint64_t)now.st_dev != dev || (uint64_t)now.st_ino != ino ||
        !S_ISREG(now.st_mode) || (in_dir && !s_opened_in(fd, in_dir))) {
        if (fd >= 0) {
            close(fd);
        } else if (errno != ENOENT && errno != ELOOP) {
            drv_warn("file not readable path=%s reason=\"%s\"", path, strerror(errno));
        }
        close(lock);
        return;
    }
    if (self->count == self->cap) {
        size_t cap = self->cap ? self->cap * 2 : 16;
        file_t **grown = realloc(self->files, cap * sizeof *grown);
        if (!grown) {
            close(fd);
            close(lock);
            return;
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
        close(fd);
        close(lock);
        return;
    }
    self->followed++;
    *file = (file_t){.pub = {.dev = dev, .ino = ino, .gone = gone}, .fd = fd, .lock_fd = lock, .seen = true, .wd = -1};
    snprintf(file->path, sizeof file->path, "%s", path);
    file->pub.path = file->path;
    const char *slash = strrchr(file->path, '/');
    file->pub.name = slash ? slash + 1 : file->path;
    file->gone_since_ms = gone ? drv_time_mono_ms() : 0;
    drv_checkpoint_t checkpoint;
    size_t bytes = 0;
    file->fp = drv_tail_fingerprint(fd, &bytes);
    file->fp_bytes = (uint32_t)bytes;
    const char *from = "its start";
    if (drv_checkpoint_load(self->dir, dev, ino, &checkpoint)) {
        //  A fingerprint of no bytes (the file was empty when it was taken)
        //  tells nothing either way: the offset alone must fit.
        size_t before = checkpoint.fingerprint_bytes;
        uint32_t fp = before ? drv_tail_fingerprint(fd, &before) : checkpoint.fingerprint;
        if (before == checkpoint.fingerprint_bytes && fp == checkpoint.fingerprint &&
            checkpoint.offset <= (int64_t)now.st_size) {
            file->pub.offset = checkpoint.offset;
            from = "its checkpoint";
        }
    } else if (!self->started_before && !self->scanned && !self->config.start_at_beginning) {
        file->pub.offset = (int64_t)now.st_size;
        from = "its end (start_at: end)";
    }
    file->settled = file->pub.offset;
    file->dirty = true;
    self->files[self->count++] = file;
    char dir[4096];
    s_dirname(path, dir, sizeof dir);
    file->wd =
        drv_tail_watch_dir(self, dir); // its directory too (a glob's may have wildcards): a new neighbour wakes a scan
    drv_tail_save_file(self, file);    // at once: renamed away before the next save, it is found again by it
    drv_info("following file path=%s from=\"%s\" offset=%lld", path, from, (long long)file->pub.offset);
}

//  A checkpoint named for a file followed already, or not this instance's:
//  not read.
static bool s_not_looked_for(void *arg, uint64_t dev, uint64_t ino)
{
    drv_tail_t *self = arg;
    return s_known(self, dev, ino) || !s_mine(self, dev, ino);
}

//  A checkpoint of a file no glob found: followed where it is in its
//  directory (renamed away while nobody read it), else forgotten.
static bool s_renamed_away(void *arg, const drv_checkpoint_t *checkpoint)
{
    drv_tail_t *self = arg;
    if (s_known(self, checkpoint->dev, checkpoint->ino) || !s_mine(self, checkpoint->dev, checkpoint->ino)) {
        return true;
    }
    //  Still where its checkpoint says: not renamed away, only not followed
    //  yet (its lock held by a generation draining). Taken for gone, it
    //  would be read to its end, its checkpoint forgotten, and found again
    //  as a new file: read twice from its start.
    struct stat now;
    if (stat(checkpoint->path, &now) == 0 && (uint64_t)now.st_dev == checkpoint->dev &&
        (uint64_t)now.st_ino == checkpoint->ino) {
        return true;
    }
    char dir[4096], real[PATH_MAX];
    s_dirname(checkpoint->path, dir, sizeof dir);
    DIR *d = realpath(dir, real) ? opendir(dir) : NULL;
    struct dirent *e;
    bool found = false;
    while (d && !found && (e = readdir(d))) {
        char path[4400];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_dev == checkpoint->dev &&
            (uint64_t)st.st_ino == checkpoint->ino) {
            found = true;
            s_follow(self, path, &st, true, real, false);
        }
    }
    if (d) {
        closedir(d);
    }
    int lock = found ? -1 : drv_checkpoint_lock(self->dir, checkpoint->dev, checkpoint->ino);
    if (lock >= 0) { // gone while nobody read it: what was not read of it is lost, and said
        drv_warn("file gone while nobody read it path=%s offset=%lld", checkpoint->path, (long long)checkpoint->offset);
        drv_checkpoint_forget(self->dir, checkpoint->dev, checkpoint->ino);
        close(lock);
    }
    return true;
}

static void s_found(drv_tail_t *self, const char *pattern, const char *path)
{
    //  A file followed under this name, in a watched directory, that no
    //  event named since: unchanged, its name not looked at again (a scan
    //  of thousands of idle files is a directory read, not a stat each).
    file_t *named = drv_tail_index_get(&self->by_path, drv_tail_index_path(path), 0);
    if (named && !named->touched && !self->events_lost && s_watched(self, named) && !strcmp(named->path, path)) {
        named->seen = true;
        return;
    }
    struct stat st;
    if (s_excluded(self, path) || lstat(path, &st) != 0) {
        return;
    }
    bool link = S_ISLNK(st.st_mode);
    if ((link && stat(path, &st) != 0) || !S_ISREG(st.st_mode)) {
        return;
    }
    //  A file followed is seen whoever's it is now (one no longer this
    //  instance's is let go, not taken for gone); a new one only if it is ours.
    file_t *file = s_known(self, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
    if (!file && (self->followed >= FOLLOWS_PER_SCAN || drv_time_mono_us() - self->scan_began_us > FOLLOW_BUDGET_US)) {
        self->followed = FOLLOWS_PER_SCAN; // the next scan, at once: the loop goes back to its heartbeats between
        return;
    }
    if (!file) {
        //  A glob that names the file may follow a link anywhere; else the
        //  file must open in the directories the glob matched (a link, in its own).
        char in_dir[4096];
        bool named = !s_wild(pattern);
        if (!s_mine(self, (uint64_t)st.st_dev, (uint64_t)st.st_ino) ||
            (!named && !s_expected_dir(pattern, path, in_dir, sizeof in_dir))) {
            return;
        }
        s_follow(self, path, &st, false, named ? NULL : in_dir, link);
        return;
    }
    file->seen = file->looked = true;
    file->seen_st = st;
    if (strcmp(file->path, path) != 0) {
        drv_tail_index_remove(&self->by_path, drv_tail_index_path(file->path), 0, file);
        snprintf(file->path, sizeof file->path, "%s", path); // renamed to a name a glob finds
        drv_tail_index_put(&self->by_path, drv_tail_index_path(file->path), 0, file);
        const char *slash = strrchr(file->path, '/');
        file->pub.name = slash ? slash + 1 : file->path;
        file->dirty = true;
    }
}

//  True when the file's path still names it. A file no glob found this
//  scan is gone only if not: taken for gone, its checkpoint is forgotten
//  once it is read to its end, and a glob that missed it for one scan (a
//  directory read that failed) would have it read again from its start.
static bool s_still_named(const file_t *file)
{
    struct stat st;
    return stat(file->path, &st) == 0 && (uint64_t)st.st_dev == file->pub.dev && (uint64_t)st.st_ino == file->pub.ino;
}

bool drv_tail_scan(drv_tail_t *self, int64_t now_ms)
{
    s_members(self);
    self->followed = 0;
    self->scan_began_us = drv_time_mono_us();
    for (size_t i = 0; i < self->count; i++) {
        self->files[i]->seen = self->files[i]->looked = false;
    }
    size_t i;
    json_t *pattern;
    json_array_foreach((json_t *)self->config.include, i, pattern)
    {
        glob_t found = {0};
        if (glob(json_string_value(pattern), GLOB_NOSORT, NULL, &found) == 0) {
            for (size_t k = 0; k < found.gl_pathc; k++) {
                s_found(self, json_string_value(pattern), found.gl_pathv[k]);
            }
        }
        globfree(&found);
    }
    for (size_t k = 0; k < self->count; k++) {
        file_t *file = self->files[k];
        if (!file->releasing && !file->pub.gone && !s_mine(self, file->pub.dev, file->pub.ino)) {
            file->releasing = true; // another instance's now (a core added): let go once settled
        }
        if (!file->seen && !file->pub.gone && !s_still_named(file)) {
            file->pub.gone = true; // renamed away or deleted: read to its end
        }
        if (!file->seen || file->looked) { // one seen without a look is unchanged
            drv_tail_check(file, file->looked ? &file->seen_st : NULL);
        }
        file->touched = false;
        if (file->pub.gone && !file->gone_since_ms) {
            file->gone_since_ms = now_ms;
        }
    }
    self->events_lost = false;
    bool short_ = self->followed >= FOLLOWS_PER_SCAN;
    if (!self->scanned && self->members > 0 && !short_) { // a whole scan as one of the readers
        drv_checkpoint_each(self->dir, s_not_looked_for, s_renamed_away, self);
        self->scanned = true;
        if (!self->started_before) {
            drv_checkpoint_mark_started(self->dir);
        }
    }
    return short_;
}
