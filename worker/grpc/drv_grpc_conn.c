/*  drv_grpc_conn — a gRPC connection: bytes through the socket (or
    OpenSSL) to nghttp2 and back, HTTP/1.1 refused, a drain's GOAWAY. */
#include "drv_grpc_internal.h"
#include "drv_grpc_tls.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static const char s_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

static void s_arm(conn_t *c, bool out)
{
    if (c->out_armed == out) {
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(c->server->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
    c->out_armed = out;
}

//  Writes what it can; returns bytes taken, 0 when the socket is full, -1 on error.
static ssize_t s_write(conn_t *c, const uint8_t *data, size_t len)
{
    if (c->ssl) {
        int n = SSL_write(c->ssl, data, (int)(len > INT32_MAX ? INT32_MAX : len));
        if (n > 0) {
            return n;
        }
        int e = SSL_get_error(c->ssl, n);
        return e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ ? 0 : -1;
    }
    ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
    if (n < 0) {
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    }
    return n;
}

//  Reads what is there: bytes read, 0 when nothing more now, -1 at the end or an error.
static ssize_t s_read(conn_t *c, uint8_t *buf, size_t len)
{
    if (c->ssl) {
        int n = SSL_read(c->ssl, buf, (int)len);
        if (n > 0) {
            return n;
        }
        int e = SSL_get_error(c->ssl, n);
        if (e == SSL_ERROR_WANT_WRITE) {
            s_arm(c, true);
        }
        return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
    }
    ssize_t n = recv(c->fd, buf, len, 0);
    if (n < 0) {
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    }
    return n == 0 ? -1 : n;
}

//  Sends what nghttp2 has queued, as far as the socket takes it. False when
//  the connection is over (an error, or nothing left to say or hear).
bool drv_grpc_conn_flush(conn_t *c)
{
    for (;;) {
        if (c->pending_at < c->pending_len) {
            ssize_t n = s_write(c, c->pending + c->pending_at, c->pending_len - c->pending_at);
            if (n < 0) {
                return false;
            }
            c->pending_at += (size_t)n;
            if (c->pending_at < c->pending_len) {
                s_arm(c, true);
                return true;
            }
        }
        c->pending_at = c->pending_len = 0;
        //  Everything nghttp2 has queued, gathered into one write: a call's
        //  headers, message and trailers (and other calls') leave as one
        //  segment, not as small ones Nagle and delayed ACKs would hold.
        for (;;) {
            const uint8_t *data;
            ssize_t len = nghttp2_session_mem_send(c->session, &data);
            if (len < 0) {
                return false;
            }
            if (len == 0) {
                break;
            }
            if (c->pending_len + (size_t)len > c->pending_cap) {
                size_t cap = c->pending_cap ? c->pending_cap : OUT_CHUNK;
                while (cap < c->pending_len + (size_t)len) {
                    cap *= 2;
                }
                uint8_t *grown = realloc(c->pending, cap);
                if (!grown) {
                    return false;
                }
                c->pending = grown;
                c->pending_cap = cap;
            }
            memcpy(c->pending + c->pending_len, data, (size_t)len);
            c->pending_len += (size_t)len;
            if (c->pending_len >= OUT_CHUNK) {
                break; // enough for one write; the rest after it
            }
        }
        if (c->pending_len == 0) {
            break;
        }
    }
    s_arm(c, false);
    if (c->pending_cap > 4 * OUT_CHUNK) {
        free(c->pending); // a burst's buffer is not kept
        c->pending = NULL;
        c->pending_cap = 0;
    }
    return nghttp2_session_want_read(c->session) || nghttp2_session_want_write(c->session);
}

//  The clock the connection is on: the client owes a message (a call whose
//  stream is open for reading), the engine holds calls, or it is idle.
//  While the client owes a message, its deadline runs from the last
//  progress (a call begun, message bytes): a PING or any other frame does
//  not hold it off (docs/security.md).
void drv_grpc_conn_clock(conn_t *c)
{
    bool reading = false, held = false;
    for (stream_t *s = c->streams; s; s = s->next) {
        reading |= !s->answered && !s->holding;
        held |= s->holding;
    }
    int64_t now = drv_time_mono_ms();
    if (reading) {
        drv_conn_policy_request(c->server->policy, c->policy, c->progress_ms ? c->progress_ms : now);
    } else if (held) {
        drv_conn_policy_engine(c->server->policy, c->policy);
    } else {
        drv_conn_policy_idle(c->server->policy, c->policy, now);
    }
}

void drv_grpc_conn_free(conn_t *c)
{
    drv_grpc_server_t *self = c->server;
    while (c->streams) {
        drv_grpc_call_free(c->streams);
    }
    nghttp2_session_del(c->session);
    if (c->ssl) {
        SSL_free(c->ssl);
    }
    epoll_ctl(self->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    drv_conn_policy_close(self->policy, c->policy);
    close(c->fd);
    free(c->pending);
    if (c->prev) {
        c->prev->next = c->next;
    } else {
        self->conns = c->next;
    }
    if (c->next) {
        c->next->prev = c->prev;
    }
    self->conn_count--;
    free(c);
}

//  A drain's first step on one connection: GOAWAY with the largest stream
//  id (nothing refused yet) and a PING whose answer starts the second.
void drv_grpc_conn_notice(conn_t *c)
{
    if (c->notice_ms || !c->handshaken) {
        return;
    }
    c->notice_ms = drv_time_mono_ms();
    nghttp2_submit_shutdown_notice(c->session);
    nghttp2_submit_ping(c->session, NGHTTP2_FLAG_NONE, NULL);
}

void drv_grpc_conn_goaway(conn_t *c)
{
    c->last_id = nghttp2_session_get_last_proc_stream_id(c->session);
    nghttp2_submit_goaway(c->session, NGHTTP2_FLAG_NONE, c->last_id, NGHTTP2_NO_ERROR, NULL, 0);
    c->goaway = true;
}

void drv_grpc_conn_open(drv_grpc_server_t *self, int fd, const struct sockaddr *addr)
{
    conn_t *c = calloc(1, sizeof *c);
    nghttp2_session_callbacks *callbacks = NULL;
    nghttp2_option *option = NULL;
    if (!c || nghttp2_session_callbacks_new(&callbacks) != 0 || nghttp2_option_new(&option) != 0) {
        goto fail;
    }
    c->server = self;
    c->fd = fd;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
               sizeof one); // answers go out as soon as they are written
    drv_grpc_call_callbacks(callbacks);
    nghttp2_option_set_max_outbound_ack(option,
                                        1000); // a PING or SETTINGS flood ends the connection
    int rc = nghttp2_session_server_new2(&c->session, callbacks, c, option);
    nghttp2_session_callbacks_del(callbacks);
    nghttp2_option_del(option);
    if (rc != 0) {
        goto fail;
    }
    nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, STREAMS},
                                         {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, WINDOW},
                                         {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, HEADER_BYTES}};
    nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 3);
    nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW);
    if (self->tls) {
        c->ssl = SSL_new(self->tls);
        if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
            goto fail;
        }
        SSL_set_accept_state(c->ssl);
    } else {
        c->handshaken = true;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(self->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        goto fail;
    }
    c->policy = drv_conn_policy_open(self->policy, fd, addr, drv_time_mono_ms());
    c->next = self->conns;
    if (self->conns) {
        self->conns->prev = c;
    }
    self->conns = c;
    self->conn_count++;
    return;
fail:
    if (c) {
        nghttp2_session_del(c->session);
        if (c->ssl) {
            SSL_free(c->ssl);
        }
        free(c);
    }
    close(fd);
}

//  A first line that is not HTTP/2's preface but looks like HTTP/1: answered
//  in HTTP/1.1, so that curl or a browser says what went wrong.
static bool s_http1(conn_t *c, const uint8_t *data, size_t len)
{
    size_t n = len < sizeof s_preface - 1 ? len : sizeof s_preface - 1;
    if (!memcmp(data, s_preface, n)) {
        return false;
    }
    static const char answer[] = "HTTP/1.1 505 HTTP Version Not Supported\r\n"
                                 "Content-Type: text/plain\r\nConnection: close\r\nContent-Length: 52\r\n\r\n"
                                 "this port serves OTLP/gRPC: HTTP/2 only (h2c or h2)\n";
    s_write(c, (const uint8_t *)answer,
            sizeof answer - 1); // best effort: the connection ends either way
    return true;
}

static void s_handshake(conn_t *c)
{
    int rc = SSL_do_handshake(c->ssl);
    if (rc == 1) {
        const unsigned char *alpn = NULL;
        unsigned int len = 0;
        SSL_get0_alpn_selected(c->ssl, &alpn, &len);
        c->handshaken = true;
        c->dead = len != 2 || memcmp(alpn, "h2", 2) != 0; // gRPC is HTTP/2: no ALPN h2, nothing to say
        if (!c->dead && c->server->draining) {
            drv_grpc_conn_notice(c);
        }
        return;
    }
    int e = SSL_get_error(c->ssl, rc);
    if (e == SSL_ERROR_WANT_WRITE) {
        s_arm(c, true);
    } else if (e != SSL_ERROR_WANT_READ) {
        char why[256];
        drv_debug("grpc: TLS handshake failed: %s", drv_grpc_tls_error(why, sizeof why));
        c->dead = true;
    }
}

void drv_grpc_conn_run(conn_t *c)
{
    if (c->ssl && !c->handshaken) {
        s_handshake(c);
        if (!c->handshaken || c->dead) {
            return;
        }
    }
    uint8_t buf[READ_CHUNK];
    for (int rounds = 0; rounds < 64 && !c->dead; rounds++) { // then the others' turn
        ssize_t n = s_read(c, buf, sizeof buf);
        if (n == 0) {
            break;
        }
        if (n < 0) {
            c->dead = true;
            break;
        }
        if (!c->sniffed && (c->sniffed = true) && s_http1(c, buf, (size_t)n)) {
            c->dead = true;
            break;
        }
        c->server->in_recv = true;
        ssize_t rc = nghttp2_session_mem_recv(c->session, buf, (size_t)n);
        c->server->in_recv = false;
        if (rc < 0) {
            if (rc == NGHTTP2_ERR_CALLBACK_FAILURE) { // ours (an HPACK bomb): say so
                nghttp2_session_terminate_session(c->session, NGHTTP2_ENHANCE_YOUR_CALM);
            }
            drv_grpc_conn_flush(c); // a protocol error: nghttp2 queued its GOAWAY, sent if the socket takes it
            c->dead = true;
        }
    }
    if (!c->dead && drv_grpc_conn_flush(c)) {
        drv_grpc_conn_clock(c);
    } else {
        c->dead = true;
    }
}
