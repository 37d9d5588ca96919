/*  drv_watched — a short-lived child the loop watches (see the header). */
#include "drv_watched.h"

#include "drv_spawn.h"

#include "drover/drv_time.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int drv_watched_start(drv_watched_t *self, const char *path, char *const argv[], int stdin_fd, bool with_stderr,
                      size_t cap, int64_t timeout_ms)
{
    *self = (drv_watched_t){.fd = -1, .cap = cap};
    self->out = malloc(cap + 1);
    if (!self->out) {
        errno = ENOMEM;
        return -1;
    }
    self->out[0] = 0;
    self->pid = drv_spawn_piped(path, argv, stdin_fd, with_stderr, &self->fd);
    if (self->pid < 0) {
        int saved = errno;
        free(self->out);
        *self = (drv_watched_t){.fd = -1};
        errno = saved;
        return -1;
    }
    self->deadline_ms = drv_time_mono_ms() + timeout_ms;
    return 0;
}

static void s_close(drv_watched_t *self)
{
    if (self->fd >= 0) {
        close(self->fd);
        self->fd = -1;
    }
}

void drv_watched_read(drv_watched_t *self)
{
    char chunk[4096];
    while (self->fd >= 0) {
        ssize_t n = read(self->fd, chunk, sizeof chunk);
        if (n > 0) {
            size_t room = self->cap - self->len;
            size_t take = (size_t)n < room ? (size_t)n : room;
            memcpy(self->out + self->len, chunk, take);
            self->len += take;
            self->out[self->len] = 0;
            self->truncated = self->truncated || take < (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            if (n == 0 || errno != EAGAIN) {
                s_close(self); // its end (or a pipe that cannot be read)
            }
            return;
        }
    }
}

bool drv_watched_reaped(drv_watched_t *self, pid_t pid, int status)
{
    if (pid <= 0 || pid != self->pid) {
        return false;
    }
    self->pid = 0;
    self->status = status;
    return true;
}

bool drv_watched_expire(drv_watched_t *self, int64_t now)
{
    if (drv_watched_over(self) || self->killed || now < self->deadline_ms) {
        return false;
    }
    s_close(self); // a grandchild could hold the pipe open: stop reading it
    if (self->pid <= 0) {
        return false; // it ended in time; only its output did not
    }
    kill(self->pid, SIGKILL);
    self->killed = true;
    return true;
}

int64_t drv_watched_left_ms(const drv_watched_t *self, int64_t now)
{
    if (self->killed || drv_watched_over(self)) {
        return -1;
    }
    return self->deadline_ms > now ? self->deadline_ms - now : 0;
}

bool drv_watched_over(const drv_watched_t *self)
{
    return self->pid == 0 && self->fd < 0;
}

void drv_watched_release(drv_watched_t *self)
{
    if (self->pid > 0 && !self->killed) {
        kill(self->pid, SIGKILL);
    }
    s_close(self);
    free(self->out);
    *self = (drv_watched_t){.fd = -1};
}
