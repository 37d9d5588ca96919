/*  drv_config_watch — see drv_config_watch.h. */
#include "drv_config_watch.h"
#include "drv_reload.h"
#include "drv_events.h"

#include "drover/drv_file.h"
#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define QUIET_MS 250 // a burst of events is over after this long without one
#define EVENTS (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_DELETE | IN_ATTRIB | IN_MODIFY)

struct drv_config_watch_t {
    int fd;
    int dir_watch;    // the directory the path names
    int target_watch; // the directory the path resolves to, when elsewhere (-1: none)
    char target_dir[PATH_MAX];
    //  The names whose events matter; another file written in the same
    //  directory is none of the watcher's business.
    char name[NAME_MAX + 1];        // the file's own name, in dir_watch
    char link_first[NAME_MAX + 1];  // when it is a relative symlink: its target's first component
                                    // (a ConfigMap's "..data"), in dir_watch ("": none)
    char target_name[NAME_MAX + 1]; // the name it resolves to, in target_watch
    int64_t quiet_at_ms;            // mono: the burst is over then (0: no burst)
    uint64_t content_hash;          // of the file as last read
    bool readable;                  // it could be read then
};

//  FNV-1a of the file's content; false when it cannot be read (a rename
//  under way, or gone; why says).
static bool s_hash(const char *path, uint64_t *hash, char *why, size_t whylen)
{
    size_t size;
    char *text = drv_file_read(path, DRV_CONFIG_MAX_BYTES, &size, why, whylen);
    if (!text) {
        return false;
    }
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < size; i++) {
        h = (h ^ (unsigned char)text[i]) * 1099511628211ULL;
    }
    free(text);
    *hash = h;
    return true;
}

//  Watches the directory the path resolves to when it is not the one it names
//  (a symlink to elsewhere); kept current as the link changes.
static void s_follow_target(drv_config_watch_t *self, const char *path, const char *named_dir)
{
    char resolved[PATH_MAX], dir[PATH_MAX], link[PATH_MAX];
    ssize_t len = readlink(path, link, sizeof link - 1);
    self->link_first[0] = 0;
    if (len > 0 && link[0] != '/') {
        link[len] = 0;
        snprintf(self->link_first, sizeof self->link_first, "%.*s", (int)strcspn(link, "/"), link);
    }
    if (!realpath(path, resolved)) {
        return;
    }
    snprintf(self->target_name, sizeof self->target_name, "%s", strrchr(resolved, '/') + 1);
    snprintf(dir, sizeof dir, "%s", dirname(resolved));
    char named[PATH_MAX];
    if (!realpath(named_dir, named) || !strcmp(dir, named) || !strcmp(dir, self->target_dir)) {
        return;
    }
    if (self->target_watch >= 0) {
        inotify_rm_watch(self->fd, self->target_watch);
    }
    self->target_watch = inotify_add_watch(self->fd, dir, EVENTS);
    snprintf(self->target_dir, sizeof self->target_dir, "%s", self->target_watch >= 0 ? dir : "");
}

drv_config_watch_t *drv_config_watch_new(drv_engine_t *engine)
{
    const char *path = engine->config->path;
    drv_config_watch_t *self = calloc(1, sizeof *self);
    if (!self) {
        abort();
    }
    self->target_watch = -1;
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    snprintf(self->name, sizeof self->name, "%s", basename(copy));
    snprintf(copy, sizeof copy, "%s", path);
    const char *dir = dirname(copy);
    self->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    self->dir_watch = self->fd >= 0 ? inotify_add_watch(self->fd, dir, EVENTS) : -1;
    if (self->dir_watch < 0) {
        drv_error("watch_config: cannot watch %s: %s; the file is not watched (SIGHUP still reloads)", dir,
                  strerror(errno));
        drv_config_watch_destroy(&self);
        return NULL;
    }
    s_follow_target(self, path, dir);
    char why[600];
    self->readable = s_hash(path, &self->content_hash, why, sizeof why);
    drv_info("watching the config file path=%s dir=%s", path, dir);
    return self;
}

void drv_config_watch_destroy(drv_config_watch_t **self_p)
{
    if (self_p && *self_p) {
        if ((*self_p)->fd >= 0) {
            close((*self_p)->fd);
        }
        free(*self_p);
        *self_p = NULL;
    }
}

int drv_config_watch_fd(const drv_config_watch_t *self)
{
    return self->fd;
}

//  Whether an event may be about the file or what it links through.
static bool s_relevant(const drv_config_watch_t *self, const struct inotify_event *event)
{
    if (event->wd < 0 || event->len == 0 || (event->mask & IN_Q_OVERFLOW)) {
        return true; // the directory itself, or events were lost: look
    }
    if (event->wd == self->dir_watch) {
        return !strcmp(event->name, self->name) || (self->link_first[0] && !strcmp(event->name, self->link_first));
    }
    return event->wd == self->target_watch && !strcmp(event->name, self->target_name);
}

void drv_config_watch_on_readable(drv_config_watch_t *self)
{
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    bool relevant = false;
    ssize_t n;
    while ((n = read(self->fd, buf, sizeof buf)) > 0) {
        for (ssize_t at = 0; at + (ssize_t)sizeof(struct inotify_event) <= n;) {
            const struct inotify_event *event = (const struct inotify_event *)(buf + at);
            relevant |= s_relevant(self, event);
            at += (ssize_t)(sizeof *event + event->len);
        }
    }
    if (relevant) {
        self->quiet_at_ms = drv_time_mono_ms() + QUIET_MS;
    }
}

int64_t drv_config_watch_tick(drv_engine_t *engine, drv_config_watch_t *self)
{
    if (self->quiet_at_ms == 0) {
        return -1;
    }
    int64_t now = drv_time_mono_ms();
    if (now < self->quiet_at_ms) {
        return self->quiet_at_ms - now;
    }
    self->quiet_at_ms = 0;
    const char *path = engine->config->path;
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    s_follow_target(self, path, dirname(copy));
    uint64_t hash;
    char why[600];
    if (!s_hash(path, &hash, why, sizeof why)) {
        if (self->readable) {
            drv_warn("watch_config: %s; what runs stays as it is", why);
        }
        self->readable = false;
        return -1;
    }
    bool changed = !self->readable || hash != self->content_hash;
    self->readable = true;
    self->content_hash = hash;
    if (!changed) {
        drv_info("watch_config: %s changed on disk but its content did not; nothing to reload", path);
        return -1;
    }
    if (engine->shutting_down) {
        return -1;
    }
    drv_events_publish(engine, "config.changed", NULL, NULL, json_pack("{s:s}", "path", path));
    drv_reload_apply(engine, "the config file changed");
    return -1;
}
