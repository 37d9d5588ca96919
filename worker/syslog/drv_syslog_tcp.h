/*  drv_syslog_tcp — syslog over TCP inside one instance: accepts on the
    listening socket droverd bound (every instance shares it), reads each
    connection and cuts its stream into messages (drv_syslog_frame.h), all
    behind one epoll descriptor the worker polls.

    While the instance exports, it does not read: a sender that outruns the
    exporters fills its socket buffers and is held back (TCP's own
    back-pressure), never dropped. A drain stops accepting at once (the
    other instances accept from then on), reads what each connection has,
    and closes it at its next message boundary, or a second after the drain
    began. Syslog over TCP has no acknowledgement: what a sender wrote just
    as its connection was closed may be lost; it reconnects to an instance
    that stays. */
#ifndef DRV_SYSLOG_TCP_H
#define DRV_SYSLOG_TCP_H

#include "drover/drv_conn_policy.h"

#include <stddef.h>
#include <stdint.h>

typedef struct drv_syslog_tcp_t drv_syslog_tcp_t;

//  A message cut from a stream (valid during the call), and the address
//  its connection came from ("" when not known).
typedef void(drv_syslog_tcp_fn)(void *arg, const char *msg, size_t len, const char *peer);
//  A frame longer than max_message_bytes: its connection was closed (and
//  the reason logged).
typedef void(drv_syslog_tcp_refused_fn)(void *arg);

//  Serves listen_fd (inherited; closed here when draining or destroyed),
//  taking messages of at most max_message_bytes. NULL with the reason in err.
//  The `connections` defaults of receiver:syslog over TCP, per instance (docs/nodes.md).
#define DRV_SYSLOG_TCP_PER_ADDRESS 64   // connections one sender address may hold
#define DRV_SYSLOG_TCP_CONNECTIONS 1024 // all together; past it the oldest silent sender is cut
#define DRV_SYSLOG_TCP_IDLE_SECS 300    // a sender silent this long is closed (it reconnects when it next sends)

//  limits: per address, total, and idle_ms (request_ms the same); body_budget unused.
drv_syslog_tcp_t *drv_syslog_tcp_new(int listen_fd, size_t max_message_bytes, const drv_conn_limits_t *limits,
                                     char *err, size_t errlen);
void drv_syslog_tcp_destroy(drv_syslog_tcp_t **self_p);

//  The descriptor to poll; -1 once drained with no connection left.
int drv_syslog_tcp_fd(drv_syslog_tcp_t *self);
//  Milliseconds until a draining connection must be closed, or -1.
int64_t drv_syslog_tcp_timeout_ms(drv_syslog_tcp_t *self);
//  Accepts and reads what is ready, calling fn for each whole message.
//  Stops reading once max_messages were cut (what one read brought is cut
//  whole, so a batch holds at most max_messages plus one read's worth).
void drv_syslog_tcp_run(drv_syslog_tcp_t *self, size_t max_messages, drv_syslog_tcp_fn *fn,
                        drv_syslog_tcp_refused_fn *refused, void *arg);
void drv_syslog_tcp_drain(drv_syslog_tcp_t *self);

#endif
