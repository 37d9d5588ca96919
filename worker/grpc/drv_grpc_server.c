/*  drv_grpc_server — see drv_grpc_server.h. nghttp2 does HTTP/2 (framing,
    HPACK, flow control, PING answers); drv_grpc_conn.c moves its bytes,
    drv_grpc_call.c makes calls of its streams; here, the listening socket,
    the epoll set, and what the instance's loop asks of the server. */
#include "drv_grpc_internal.h"
#include "drv_grpc_tls.h"

#include "drover/drv_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

//  Flushes the connections answered outside their own turn, and frees the
//  ones that are over.
static void s_reap(drv_grpc_server_t *self)
{
    conn_t *next;
    for (conn_t *c = self->conns; c; c = next) {
        next = c->next;
        if (c->dirty && !c->dead) {
            c->dirty = false;
            c->dead = !drv_grpc_conn_flush(c);
            if (!c->dead) {
                drv_grpc_conn_clock(c);
            }
        }
        if (c->dead) {
            drv_grpc_conn_free(c);
        }
    }
}

//  A call whose message is not whole request_ms after it began is reset
//  (CANCEL) and its bytes given back, whatever else its connection does:
//  a connection kept busy by one call cannot keep its other calls' bytes.
static void s_reset_overdue(drv_grpc_server_t *self, int64_t now_ms)
{
    for (conn_t *c = self->conns; c; c = c->next) {
        for (stream_t *s = c->streams; s; s = s->next) {
            if (!s->answered && !s->holding && now_ms - s->head_us / 1000 >= self->config.connections.request_ms) {
                drv_grpc_call_overdue(s);
                c->dirty = true;
            }
        }
    }
}

static void s_accept(drv_grpc_server_t *self)
{
    for (int i = 0; i < 64 && self->listen_fd >= 0; i++) {
        struct sockaddr_storage addr;
        socklen_t len = sizeof addr;
        int fd = accept4(self->listen_fd, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            return; // EAGAIN: another instance took it, or nothing is there
        }
        drv_grpc_conn_open(self, fd, (struct sockaddr *)&addr);
    }
}

//  ---- the server

drv_grpc_server_t *drv_grpc_server_new(int listen_fd, const drv_grpc_config_t *config, char *err, size_t errlen)
{
    drv_grpc_server_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(err, errlen, "out of memory");
        close(listen_fd);
        return NULL;
    }
    self->config = *config;
    self->listen_fd = listen_fd;
    self->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (config->cert_file) {
        self->tls = drv_grpc_tls_server(config->cert_file, config->key_file, err, errlen);
        if (!self->tls) {
            drv_grpc_server_destroy(&self);
            return NULL;
        }
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = self};
    if (self->epoll_fd < 0 || epoll_ctl(self->epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev) != 0) {
        snprintf(err, errlen, "cannot poll the inherited gRPC socket: %s", strerror(errno));
        drv_grpc_server_destroy(&self);
        return NULL;
    }
    drv_conn_limits_t limits = config->connections;
    limits.body_budget = config->buffer_bytes;
    self->policy = drv_conn_policy_new(&limits, "grpc receiver");
    return self;
}

void drv_grpc_server_destroy(drv_grpc_server_t **self_p)
{
    drv_grpc_server_t *self = *self_p;
    if (!self) {
        return;
    }
    *self_p = NULL;
    while (self->conns) {
        drv_grpc_conn_free(self->conns);
    }
    if (self->listen_fd >= 0) {
        close(self->listen_fd);
    }
    if (self->epoll_fd >= 0) {
        close(self->epoll_fd);
    }
    SSL_CTX_free(self->tls);
    drv_conn_policy_destroy(&self->policy);
    free(self);
}

int drv_grpc_server_fd(drv_grpc_server_t *self)
{
    return self->draining && !self->conns ? -1 : self->epoll_fd;
}

int64_t drv_grpc_server_timeout_ms(drv_grpc_server_t *self)
{
    int64_t now = drv_time_mono_ms();
    int64_t next = drv_conn_policy_expire(self->policy, now);
    if (self->conns) {
        int64_t check = self->next_stream_check_ms > now ? self->next_stream_check_ms - now : 0;
        next = next < 0 || check < next ? check : next;
    }
    for (conn_t *c = self->conns; c; c = c->next) {
        if (c->notice_ms && !c->goaway) {
            int64_t due = c->notice_ms + NOTICE_MS - now;
            due = due < 0 ? 0 : due;
            next = next < 0 || due < next ? due : next;
        }
    }
    return next;
}

void drv_grpc_server_run(drv_grpc_server_t *self)
{
    struct epoll_event events[64];
    int n = epoll_wait(self->epoll_fd, events, 64, 0);
    for (int i = 0; i < n; i++) {
        if (events[i].data.ptr == self) {
            s_accept(self);
        }
    }
    //  Connections are only freed at the end (s_reap): every event's is alive.
    for (int i = 0; i < n; i++) {
        if (events[i].data.ptr != self && !((conn_t *)events[i].data.ptr)->dead) {
            drv_grpc_conn_run(events[i].data.ptr);
        }
    }
    int64_t now = drv_time_mono_ms();
    drv_conn_policy_expire(self->policy, now);
    if (now >= self->next_stream_check_ms) {
        s_reset_overdue(self, now);
        self->next_stream_check_ms = now + STREAM_CHECK_MS;
    }
    for (conn_t *c = self->conns; c; c = c->next) {
        if (c->notice_ms && !c->goaway && now - c->notice_ms >= NOTICE_MS) {
            drv_grpc_conn_goaway(c); // no answer to the PING in time: the final GOAWAY goes anyway
            c->dirty = true;
        }
    }
    s_reap(self);
}

void drv_grpc_server_settled(drv_grpc_server_t *self, int64_t upto)
{
    stream_t **link = &self->held;
    while (*link) {
        stream_t *s = *link;
        if (s->input > upto) {
            link = &s->next_held;
            continue;
        }
        *link = s->next_held;
        s->holding = false;
        if (self->config.gave_up && self->config.gave_up(self->config.arg, s->input)) {
            free(s->reply.body); // settled, but not delivered
            s->reply = (drv_grpc_reply_t){.status = DRV_GRPC_UNAVAILABLE};
            snprintf(s->reply.message, sizeof s->reply.message,
                     "records of this call were given up by an exporter (its errors and the log say why)");
        }
        drv_grpc_call_submit(s);
        s->conn->dirty = true;
    }
    if (!self->in_recv) {
        s_reap(self);
    }
}

void drv_grpc_server_drain(drv_grpc_server_t *self)
{
    if (self->draining) {
        return;
    }
    self->draining = true;
    if (self->listen_fd >= 0) {
        epoll_ctl(self->epoll_fd, EPOLL_CTL_DEL, self->listen_fd, NULL);
        close(self->listen_fd);
        self->listen_fd = -1;
    }
    for (conn_t *c = self->conns; c; c = c->next) {
        drv_grpc_conn_notice(c);
        c->dirty = true;
    }
    if (!self->in_recv) {
        s_reap(self);
    }
}
