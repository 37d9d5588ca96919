/*  drv_tail_checkpoints — the files no glob finds, known by their
    checkpoints (docs/operations.md, "Reading files"). A file whose path
    still names it is not renamed away, whoever holds its lock: the globs
    follow it once the instance that holds it (a generation draining,
    another core's) lets it go. One renamed away (the kubelet's `0.log` →
    `0.log.<time>`, which no glob finds) is found again in its directory
    by its identity and read to its end from where its checkpoint stands,
    once its lock is free; its rotated siblings that nobody followed (a
    second rotation while nobody ran) are read from their start. A file
    gone for good while nobody read it is said and forgotten. The pass
    runs at the first scan, and again at each while a checkpoint waits
    for the instance that holds its file: a file is taken over after the
    one that read it let it go, never decided on from a scan that could
    not see it. */
#include "drv_tail_internal.h"

#include "drover/drv_log.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    drv_tail_t *self;
    size_t waiting; // checkpoints of files another instance holds
} pass_t;

//  A checkpoint named for a file followed already, or not this instance's: not read.
static bool s_not_looked_for(void *arg, uint64_t dev, uint64_t ino)
{
    pass_t *pass = arg;
    return drv_tail_known(pass->self, dev, ino) || !drv_tail_mine(pass->self, dev, ino);
}

//  True when another instance holds the file's lock.
static bool s_busy(const drv_tail_t *self, uint64_t dev, uint64_t ino)
{
    int lock = drv_checkpoint_lock(self->dir, dev, ino);
    if (lock >= 0) {
        close(lock);
    }
    return lock < 0;
}

static bool s_compressed(const char *name)
{
    static const char *const suffixes[] = {".gz", ".zst", ".bz2", ".xz", ".lz4", ".zip", ".Z"};
    size_t len = strlen(name);
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
        size_t n = strlen(suffixes[i]);
        if (len > n && !strcmp(name + len - n, suffixes[i])) {
            return true;
        }
    }
    return false;
}

//  The rotated siblings of a file renamed away while nobody read it:
//  named `<the name it was first followed under>.*` in dir (real: where
//  it must be opened), not compressed nor excluded, written after (or as)
//  its checkpoint was saved,
//  and neither followed nor checkpointed by anyone (what was would have a
//  checkpoint). Rotated twice while down, the first is found by its
//  identity and the second only so: read from its start, gone, with the
//  origin (the pod) of the file it was rotated from.
static void s_siblings(drv_tail_t *self, const char *dir, const char *real, const drv_checkpoint_t *checkpoint)
{
    const char *base = strrchr(checkpoint->origin, '/');
    base = base ? base + 1 : checkpoint->origin;
    size_t len = strlen(base);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, base, len) != 0 || e->d_name[len] != '.' || !e->d_name[len + 1] ||
            s_compressed(e->d_name)) {
            continue;
        }
        char path[4400];
        struct stat st;
        drv_checkpoint_t has;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
            (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec < checkpoint->saved_ns ||
            drv_tail_excluded(self, path) || drv_tail_known(self, (uint64_t)st.st_dev, (uint64_t)st.st_ino) ||
            !drv_tail_mine(self, (uint64_t)st.st_dev, (uint64_t)st.st_ino) ||
            drv_checkpoint_load(self->dir, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &has)) {
            continue;
        }
        drv_info("file rotated while nobody read it path=%s origin=%s", path, checkpoint->origin);
        drv_tail_follow(self, path, &st, true, real, false, checkpoint->origin);
    }
    if (d) {
        closedir(d);
    }
}

//  Where a file renamed away is now: found in dir by its identity (path
//  and st set), or false.
static bool s_find(const char *dir, const drv_checkpoint_t *checkpoint, char *path, size_t len, struct stat *st)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    bool found = false;
    while (d && !found && (e = readdir(d))) {
        snprintf(path, len, "%s/%s", dir, e->d_name);
        found = lstat(path, st) == 0 && S_ISREG(st->st_mode) && (uint64_t)st->st_dev == checkpoint->dev &&
                (uint64_t)st->st_ino == checkpoint->ino;
    }
    if (d) {
        closedir(d);
    }
    return found;
}

static bool s_found_again(void *arg, const drv_checkpoint_t *checkpoint)
{
    pass_t *pass = arg;
    drv_tail_t *self = pass->self;
    if (drv_tail_known(self, checkpoint->dev, checkpoint->ino) ||
        !drv_tail_mine(self, checkpoint->dev, checkpoint->ino)) {
        return true;
    }
    //  Only where the globs look, in the directories they match (a
    //  checkpoint is outside input, docs/security.md): one whose path no
    //  glob matches, or whose directory is not the one the glob's
    //  wildcards matched (a link), is left be. Its origin names the pod
    //  only when a glob matches it too.
    char real[PATH_MAX];
    if (!drv_tail_where(self, checkpoint->path, real, sizeof real)) {
        return true;
    }
    drv_checkpoint_t one = *checkpoint;
    if (!drv_tail_globbed(self, one.origin)) {
        memcpy(one.origin, one.path, sizeof one.origin);
    }
    checkpoint = &one;
    //  Still where its checkpoint says: not renamed away, only not followed
    //  yet (its lock held by an instance that lets it go once settled).
    //  Taken for gone, it would be read to its end, its checkpoint
    //  forgotten, and found again as a new file: read twice from its start.
    struct stat st;
    if (stat(checkpoint->path, &st) == 0 && (uint64_t)st.st_dev == checkpoint->dev &&
        (uint64_t)st.st_ino == checkpoint->ino) {
        pass->waiting += s_busy(self, checkpoint->dev, checkpoint->ino);
        return true;
    }
    char dir[4096], path[4400];
    drv_tail_dirname(checkpoint->path, dir, sizeof dir);
    if (s_find(dir, checkpoint, path, sizeof path, &st)) {
        drv_tail_follow_t followed = drv_tail_follow(self, path, &st, true, real, false, checkpoint->origin);
        pass->waiting += followed == DRV_TAIL_BUSY; // its reader lets it go later: looked for again
        if (followed == DRV_TAIL_FOLLOWED) {
            s_siblings(self, dir, real, checkpoint);
        }
        return true;
    }
    int lock = drv_checkpoint_lock(self->dir, checkpoint->dev, checkpoint->ino);
    if (lock < 0) { // deleted, and still read to its end by the instance that holds it
        pass->waiting++;
        return true;
    }
    drv_warn("file gone while nobody read it path=%s offset=%lld", checkpoint->path, (long long)checkpoint->offset);
    drv_checkpoint_forget(self->dir, checkpoint->dev, checkpoint->ino);
    close(lock);
    s_siblings(self, dir, real, checkpoint);
    return true;
}

size_t drv_tail_checkpoints(drv_tail_t *self)
{
    pass_t pass = {.self = self};
    drv_checkpoint_each(self->dir, s_not_looked_for, s_found_again, &pass);
    return pass.waiting;
}
