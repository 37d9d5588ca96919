/*  drv_stream — a bounded byte queue from droverd's loop to one client that
    reads for a long time (Server-Sent Events, a tap). The loop writes; the
    HTTP server reads it as the client takes it (on the same loop today; the
    lock keeps it safe for a transport that reads from a thread of its own).
    A full queue refuses what is pushed (the writer counts it as dropped): a
    slow client never makes the engine wait or grow.

    The reader parks when the queue is empty (it is told through park, under
    the stream's lock, so a push can never slip between "empty" and
    "parked"); a push or an end wakes it through the wake function the
    transport attached. Two references: the writer's and the reader's. */
#ifndef DRV_STREAM_H
#define DRV_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct drv_stream_t drv_stream_t;
typedef void(drv_stream_wake_fn)(void *arg);

//  A stream holding at most max_bytes unread; the caller holds one reference.
drv_stream_t *drv_stream_new(size_t max_bytes);
drv_stream_t *drv_stream_ref(drv_stream_t *stream);
void drv_stream_unref(drv_stream_t **stream);

//  Writer. Returns 0 queued, -1 refused (the queue is full), -2 the reader
//  left (the writer should forget the stream).
int drv_stream_push(drv_stream_t *stream, const char *data, size_t len);
//  No more data: the reader ends once it has read what is queued.
void drv_stream_end(drv_stream_t *stream);
//  Bytes queued and not yet read.
size_t drv_stream_queued(drv_stream_t *stream);
bool drv_stream_gone(drv_stream_t *stream);

//  Reader. wake(arg) is called (under the lock, from the writer)
//  after the reader parked and something arrived.
void drv_stream_attach(drv_stream_t *stream, drv_stream_wake_fn *wake, void *arg);
//  Copies up to max bytes. Returns the count; 0 when nothing is queued, after
//  calling park(arg) under the lock; -1 once ended and read to the end.
ssize_t drv_stream_read(drv_stream_t *stream, char *buf, size_t max, drv_stream_wake_fn *park, void *arg);
//  The reader is gone (its connection closed): pushes answer -2 from now on.
void drv_stream_leave(drv_stream_t *stream);

#endif
