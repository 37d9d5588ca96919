/*  drv_tail_watch — what tells a receiver:file instance that its files
    changed without a look at each (drv_tail.h): an inotify watch on the
    deepest directory without a wildcard of each glob (a new file, or a
    directory on the way to one, appears there) and on the directory of
    each file followed (a write wakes it, a rename or a delete has the
    next scan look at its name again). */
#include "drv_tail_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define WATCHED (IN_CREATE | IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE | IN_CLOSE_WRITE)

void drv_tail_watch(drv_tail_t *self)
{
    size_t i;
    json_t *glob_;
    json_array_foreach((json_t *)self->config.include, i, glob_)
    {
        char dir[4096];
        drv_tail_fixed_dir(json_string_value(glob_), dir, sizeof dir);
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

bool drv_tail_watched(const drv_tail_t *self, const file_t *file)
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
