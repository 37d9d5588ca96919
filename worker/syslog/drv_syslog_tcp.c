/*  drv_syslog_tcp — see drv_syslog_tcp.h. */
#include "drv_syslog_tcp.h"
#include "drv_syslog_frame.h"

#include "drover/drv_conn_policy.h"
#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEADROOM 32   // a buffer holds one whole message and its count
#define DRAIN_MS 1000 // a draining connection is closed by then

typedef struct conn_t conn_t;
struct conn_t {
    int fd;
    drv_conn_t *policy; // its record in the connection policy
    char *buf;          // max_message_bytes + HEADROOM
    size_t len;
    drv_syslog_framer_t framer;
    bool refused;  // a frame past the limit: closed without a word about what it held
    char peer[64]; // the address it came from, as text
    conn_t *prev, *next;
};

struct drv_syslog_tcp_t {
    int epoll_fd;
    int listen_fd;  // -1 once draining
    bool listening; // in the epoll set
    conn_t *conns;
    size_t count;
    drv_conn_policy_t *policy; // caps and the idle deadline (common/drv_conn_policy)
    bool draining;
    int64_t drain_deadline_ms; // mono
    size_t max;                // max_message_bytes
    size_t total, per_address; // connections.total and .per_address: at most their sum are accepted
};

typedef struct {
    drv_syslog_tcp_fn *fn;
    drv_syslog_tcp_refused_fn *refused;
    void *arg;
    size_t budget; // messages still to cut (it only limits further reads)
} sink_t;

static void s_listen(drv_syslog_tcp_t *self, bool on)
{
    if (self->listen_fd < 0 || self->listening == on) {
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(self->epoll_fd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, self->listen_fd, &ev);
    self->listening = on;
}

static void s_close(drv_syslog_tcp_t *self, conn_t *c)
{
    if (c->len > 0 && !c->refused) {
        drv_warn("syslog tcp: connection closed inside a message; its %zu bytes are dropped", c->len);
    }
    epoll_ctl(self->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    drv_conn_policy_close(self->policy, c->policy);
    if (c->prev) {
        c->prev->next = c->next;
    } else {
        self->conns = c->next;
    }
    if (c->next) {
        c->next->prev = c->prev;
    }
    free(c->buf);
    free(c);
    self->count--;
    if (!self->draining && self->count < self->total + self->per_address) {
        s_listen(self, true);
    }
}

drv_syslog_tcp_t *drv_syslog_tcp_new(int listen_fd, size_t max_message_bytes, const drv_conn_limits_t *limits,
                                     char *err, size_t errlen)
{
    drv_syslog_tcp_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(err, errlen, "out of memory");
        close(listen_fd);
        return NULL;
    }
    self->listen_fd = listen_fd;
    self->max = max_message_bytes ? max_message_bytes : DRV_SYSLOG_FRAME_MAX;
    self->total = limits->total;
    self->per_address = limits->per_address;
    self->policy = drv_conn_policy_new(limits, "syslog tcp");
    self->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (self->epoll_fd < 0) {
        snprintf(err, errlen, "epoll_create1: %s", strerror(errno));
        drv_syslog_tcp_destroy(&self);
        return NULL;
    }
    s_listen(self, true);
    return self;
}

void drv_syslog_tcp_destroy(drv_syslog_tcp_t **self_p)
{
    drv_syslog_tcp_t *self = *self_p;
    if (!self) {
        return;
    }
    *self_p = NULL;
    self->draining = true;
    while (self->conns) {
        self->conns->len = 0;
        s_close(self, self->conns);
    }
    if (self->listen_fd >= 0) {
        close(self->listen_fd); // this instance's copy; droverd keeps the socket
    }
    if (self->epoll_fd >= 0) {
        close(self->epoll_fd);
    }
    drv_conn_policy_destroy(&self->policy);
    free(self);
}

int drv_syslog_tcp_fd(drv_syslog_tcp_t *self)
{
    return self->draining && self->count == 0 ? -1 : self->epoll_fd;
}

int64_t drv_syslog_tcp_timeout_ms(drv_syslog_tcp_t *self)
{
    int64_t idle = drv_conn_policy_expire(self->policy, drv_time_mono_ms());
    if (!self->draining || self->count == 0) {
        return idle;
    }
    int64_t left = self->drain_deadline_ms - drv_time_mono_ms();
    left = left > 0 ? left : 0;
    return idle >= 0 && idle < left ? idle : left;
}

static void s_accept(drv_syslog_tcp_t *self)
{
    while (self->count < self->total + self->per_address) { // the policy cuts back to total
        struct sockaddr_storage addr;
        socklen_t addr_len = sizeof addr;
        int fd = accept4(self->listen_fd, (struct sockaddr *)&addr, &addr_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            return; // EAGAIN: another instance took it, or none is waiting
        }
        conn_t *c = calloc(1, sizeof *c);
        char *buf = c ? malloc(self->max + HEADROOM) : NULL;
        if (!buf) {
            free(c);
            close(fd);
            return;
        }
        c->fd = fd;
        c->buf = buf;
        c->framer.max = self->max;
        c->policy = drv_conn_policy_open(self->policy, fd, (struct sockaddr *)&addr, drv_time_mono_ms());
        drv_conn_peer(c->policy, c->peer, sizeof c->peer);
        drv_conn_policy_idle(self->policy, c->policy, drv_time_mono_ms());
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
        epoll_ctl(self->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
        c->next = self->conns;
        if (self->conns) {
            self->conns->prev = c;
        }
        self->conns = c;
        self->count++;
    }
    s_listen(self, false); // full: the other instances accept until one closes
}

//  Every whole message out of c's buffer, counted against the budget;
//  what is left is at most one partial message. False when a frame is
//  past the limit: the connection is to be closed.
static bool s_cut(drv_syslog_tcp_t *self, conn_t *c, sink_t *sink)
{
    size_t at = 0;
    drv_frame_t frame;
    const char *msg;
    size_t msg_len, used;
    while ((frame = drv_syslog_frame_next(&c->framer, c->buf + at, c->len - at, &msg, &msg_len, &used)) ==
           DRV_FRAME_MESSAGE) {
        at += used;
        sink->fn(sink->arg, msg, msg_len, c->peer);
        sink->budget -= sink->budget > 0;
    }
    memmove(c->buf, c->buf + at, c->len - at);
    c->len -= at;
    if (frame == DRV_FRAME_TOO_LONG) {
        bool octets = c->framer.framing == DRV_FRAMING_OCTETS;
        drv_warn("syslog tcp: a %s of %s%zu bytes is longer than max_message_bytes (%zu): refused, the connection "
                 "is closed",
                 octets ? "frame" : "line", octets ? "" : "more than ", octets ? msg_len : self->max, self->max);
        c->refused = true;
        sink->refused(sink->arg);
        return false;
    }
    return true;
}

//  Reads what c has, until the socket is empty or the budget spent.
//  Returns false when the connection is over (the peer closed, or failed,
//  or sent a frame past the limit).
static bool s_read(drv_syslog_tcp_t *self, conn_t *c, sink_t *sink)
{
    size_t room = self->max + HEADROOM;
    while (sink->budget > 0 && c->len < room) {
        ssize_t n = recv(c->fd, c->buf + c->len, room - c->len, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return true;
        }
        if (n <= 0) {
            s_cut(self, c, sink);
            return false;
        }
        c->len += (size_t)n;
        drv_conn_policy_idle(self->policy, c->policy, drv_time_mono_ms());
        if (!s_cut(self, c, sink)) {
            return false;
        }
    }
    return true;
}

void drv_syslog_tcp_run(drv_syslog_tcp_t *self, size_t max_messages, drv_syslog_tcp_fn *fn,
                        drv_syslog_tcp_refused_fn *refused, void *arg)
{
    sink_t sink = {fn, refused, arg, max_messages};
    drv_conn_policy_expire(self->policy, drv_time_mono_ms()); // cut senders are read to their end below
    struct epoll_event events[64];
    int n = epoll_wait(self->epoll_fd, events, 64, 0);
    for (int i = 0; i < n; i++) {
        conn_t *c = events[i].data.ptr;
        if (!c) {
            s_accept(self);
        } else if (!s_read(self, c, &sink)) {
            s_close(self, c);
        }
    }
    if (self->draining) {
        //  Each connection is read to its end so far and closed at a message
        //  boundary, or when time is up.
        bool late = drv_time_mono_ms() >= self->drain_deadline_ms;
        for (conn_t *c = self->conns, *next; c; c = next) {
            next = c->next;
            bool open = sink.budget > 0 ? s_read(self, c, &sink) : true;
            bool boundary = sink.budget > 0 && c->len == 0;
            if (!open || boundary || late) {
                s_close(self, c);
            }
        }
    }
}

void drv_syslog_tcp_drain(drv_syslog_tcp_t *self)
{
    if (self->draining) {
        return;
    }
    s_listen(self, false);
    close(self->listen_fd);
    self->listen_fd = -1;
    self->draining = true;
    self->drain_deadline_ms = drv_time_mono_ms() + DRAIN_MS;
}
