/*  drv_tail_scan — finding the files to follow (drv_tail.h): the include
    globs less the exclude ones, regular files only, a link only when its
    glob names it or it points into its own directory. What decides is
    where the file opened is (docs/security.md): the directories a glob's
    wildcards matched must be the ones it was opened in, so neither a
    directory link that glob(3) walked into nor a link flipped between
    the checks and the open exports a file from elsewhere. The files this
    instance owns (its identity hashed over the instances) and whose lock
    it gets (drv_tail_follow.c); the files it follows that no glob finds
    any more (gone); and, until none waits, the files only checkpoints
    name (drv_tail_checkpoints.c). */
#include "drv_tail_internal.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

//  What one scan may begin: each file followed is a lock, an open and a
//  checkpoint written, which on a busy disk take long; the rest waits for
//  the next scan, at once, the loop's heartbeats between.
#define FOLLOWS_PER_SCAN 256
#define FOLLOW_BUDGET_US 20000

//  Which instances read: joins when it has not yet, then its place among them.
static void s_members(drv_tail_t *self)
{
    if (self->member_fd >= 0 &&
        !drv_checkpoint_joined(self->dir, self->config.generation, self->config.core, self->member_fd)) {
        close(self->member_fd); // removed from under us: not counted, so joined again
        self->member_fd = -1;
    }
    if (self->member_fd < 0) {
        self->member_fd = drv_checkpoint_join(self->dir, self->config.generation, self->config.core);
    }
    if (self->member_fd < 0 ||
        !drv_checkpoint_rank(self->dir, self->config.generation, self->config.core, &self->rank, &self->members)) {
        self->members = 0; // not (yet) one of the newest generation's: nothing new is read
    }
}

static void s_found(drv_tail_t *self, const char *pattern, const char *path)
{
    //  A file followed under this name, in a watched directory, that no
    //  event named since: unchanged, its name not looked at again (a scan
    //  of thousands of idle files is a directory read, not a stat each).
    file_t *named = drv_tail_index_get(&self->by_path, drv_tail_index_path(path), 0);
    if (named && !named->touched && !self->events_lost && drv_tail_watched(self, named) && !strcmp(named->path, path)) {
        named->seen = true;
        return;
    }
    struct stat st;
    if (!drv_tail_globbed(self, path) || lstat(path, &st) != 0) {
        return;
    }
    bool link = S_ISLNK(st.st_mode);
    if ((link && stat(path, &st) != 0) || !S_ISREG(st.st_mode)) {
        return;
    }
    //  A file followed is seen whoever's it is now (one no longer this
    //  instance's is let go, not taken for gone); a new one only if it is ours.
    file_t *file = drv_tail_known(self, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
    if (!file && (self->followed >= FOLLOWS_PER_SCAN || drv_time_mono_us() - self->scan_began_us > FOLLOW_BUDGET_US)) {
        self->followed = FOLLOWS_PER_SCAN; // the next scan, at once: the loop goes back to its heartbeats between
        return;
    }
    if (!file) {
        //  A glob that names the file may follow a link anywhere; else the
        //  file must open in the directories the glob matched (a link, in its own).
        char in_dir[4096];
        bool named = !s_wild(pattern);
        if (!drv_tail_mine(self, (uint64_t)st.st_dev, (uint64_t)st.st_ino) ||
            (!named && !drv_tail_expected_dir(pattern, path, in_dir, sizeof in_dir))) {
            return;
        }
        drv_tail_follow(self, path, &st, false, named ? NULL : in_dir, link, NULL);
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
        if (!file->releasing && !file->pub.gone && !drv_tail_mine(self, file->pub.dev, file->pub.ino)) {
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
    //  A whole scan as one of the readers: the files no glob found, by
    //  their checkpoints, until none waits for another instance to let it go.
    if (!self->scanned && self->members > 0 && !short_) {
        size_t waiting = drv_tail_checkpoints(self);
        if (waiting > 0 && !self->waiting) {
            drv_info("waiting for files another instance holds count=%zu", waiting);
        } else if (waiting == 0 && self->waiting) {
            drv_info("files another instance held are taken over");
        }
        self->waiting = waiting;
        self->scanned = waiting == 0;
        if (!self->started_before) {
            drv_checkpoint_mark_started(self->dir);
            self->started_before = true; // what is found from now on was not there at the first start
        }
    }
    return short_;
}
