/*  drv_stream — a bounded byte queue from the loop to a long-reading client
    (drv_stream.h): unread bytes are [head, len) of one buffer; a push moves
    them to the front only when the room behind them runs out, so a reader
    catching up does not copy the queue once per block it takes. */
#include "drv_stream.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct drv_stream_t {
    pthread_mutex_t lock;
    int refs;
    char *data; // queued bytes, [head, len)
    size_t head;
    size_t len;
    size_t cap;
    size_t max;
    bool ended;  // the writer is done
    bool gone;   // the reader left
    bool parked; // the reader waits to be woken
    drv_stream_wake_fn *wake;
    void *wake_arg;
};

drv_stream_t *drv_stream_new(size_t max_bytes)
{
    drv_stream_t *self = calloc(1, sizeof *self);
    if (!self) {
        abort();
    }
    pthread_mutex_init(&self->lock, NULL);
    self->refs = 1;
    self->max = max_bytes;
    return self;
}

drv_stream_t *drv_stream_ref(drv_stream_t *stream)
{
    pthread_mutex_lock(&stream->lock);
    stream->refs++;
    pthread_mutex_unlock(&stream->lock);
    return stream;
}

void drv_stream_unref(drv_stream_t **stream)
{
    drv_stream_t *self = *stream;
    if (!self) {
        return;
    }
    *stream = NULL;
    pthread_mutex_lock(&self->lock);
    int left = --self->refs;
    pthread_mutex_unlock(&self->lock);
    if (left == 0) {
        pthread_mutex_destroy(&self->lock);
        free(self->data);
        free(self);
    }
}

//  Called with the lock held.
static void s_wake(drv_stream_t *self)
{
    if (self->parked && self->wake) {
        self->parked = false;
        self->wake(self->wake_arg);
    }
}

int drv_stream_push(drv_stream_t *stream, const char *data, size_t len)
{
    int rc = 0;
    pthread_mutex_lock(&stream->lock);
    if (stream->gone) {
        rc = -2;
    } else if (stream->ended || stream->len - stream->head + len > stream->max) {
        rc = -1;
    } else {
        if (stream->len + len > stream->cap && stream->head > 0) {
            memmove(stream->data, stream->data + stream->head, stream->len - stream->head);
            stream->len -= stream->head;
            stream->head = 0;
        }
        if (stream->len + len > stream->cap) {
            size_t cap = stream->cap ? stream->cap : 4096;
            while (cap < stream->len + len) {
                cap *= 2;
            }
            char *grown = realloc(stream->data, cap);
            if (!grown) {
                pthread_mutex_unlock(&stream->lock);
                return -1;
            }
            stream->data = grown;
            stream->cap = cap;
        }
        memcpy(stream->data + stream->len, data, len);
        stream->len += len;
        s_wake(stream);
    }
    pthread_mutex_unlock(&stream->lock);
    return rc;
}

void drv_stream_end(drv_stream_t *stream)
{
    pthread_mutex_lock(&stream->lock);
    stream->ended = true;
    s_wake(stream);
    pthread_mutex_unlock(&stream->lock);
}

bool drv_stream_gone(drv_stream_t *stream)
{
    pthread_mutex_lock(&stream->lock);
    bool gone = stream->gone;
    pthread_mutex_unlock(&stream->lock);
    return gone;
}

void drv_stream_attach(drv_stream_t *stream, drv_stream_wake_fn *wake, void *arg)
{
    pthread_mutex_lock(&stream->lock);
    stream->wake = wake;
    stream->wake_arg = arg;
    pthread_mutex_unlock(&stream->lock);
}

ssize_t drv_stream_read(drv_stream_t *stream, char *buf, size_t max, drv_stream_wake_fn *park, void *arg)
{
    ssize_t n;
    pthread_mutex_lock(&stream->lock);
    if (stream->len > stream->head) {
        size_t queued = stream->len - stream->head;
        size_t take = queued < max ? queued : max;
        memcpy(buf, stream->data + stream->head, take);
        stream->head += take;
        n = (ssize_t)take;
        if (stream->head == stream->len) {
            stream->head = stream->len = 0;
            if (stream->cap > 256 * 1024) { // a burst is over: give its memory back
                free(stream->data);
                stream->data = NULL;
                stream->cap = 0;
            }
        }
    } else if (stream->ended) {
        n = -1;
    } else {
        stream->parked = true;
        park(arg);
        n = 0;
    }
    pthread_mutex_unlock(&stream->lock);
    return n;
}

size_t drv_stream_queued(drv_stream_t *stream)
{
    pthread_mutex_lock(&stream->lock);
    size_t queued = stream->len - stream->head;
    pthread_mutex_unlock(&stream->lock);
    return queued;
}

void drv_stream_leave(drv_stream_t *stream)
{
    pthread_mutex_lock(&stream->lock);
    stream->gone = true;
    stream->parked = false;
    stream->wake = NULL;
    pthread_mutex_unlock(&stream->lock);
}
