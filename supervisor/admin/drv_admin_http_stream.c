/*  drv_admin_http_stream — a stream as a chunked HTTP body
    (drv_admin_http_stream.h). Suspending from the content reader and
    resuming from another thread is the pattern microhttpd.h gives for "no
    data yet" (returning 0 without suspending would spin). While parked,
    MHD does not notice a client that left: the streams' writers send a
    comment every 15 s, and that write finds out. */
#include "drv_admin_http_stream.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef struct {
    drv_stream_t *stream;
    struct MHD_Connection *connection;
} reader_t;

static atomic_int s_open;

static void s_park(void *arg)
{
    MHD_suspend_connection(((reader_t *)arg)->connection);
}

static void s_wake(void *arg)
{
    MHD_resume_connection(((reader_t *)arg)->connection);
}

static ssize_t s_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    reader_t *reader = cls;
    ssize_t n = drv_stream_read(reader->stream, buf, max, s_park, reader);
    return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

static void s_free(void *cls)
{
    reader_t *reader = cls;
    drv_stream_leave(reader->stream);
    drv_stream_unref(&reader->stream);
    free(reader);
    if (atomic_fetch_sub(&s_open, 1) == 1) {
        malloc_trim(0); // the last stream closed: a flood's memory goes back to the system
    }
}

struct MHD_Response *drv_admin_http_stream_response(drv_stream_t *stream, struct MHD_Connection *connection)
{
    reader_t *reader = calloc(1, sizeof *reader);
    if (!reader) {
        return NULL;
    }
    reader->stream = drv_stream_ref(stream);
    reader->connection = connection;
    drv_stream_attach(stream, s_wake, reader);
    atomic_fetch_add(&s_open, 1);
    struct MHD_Response *response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, s_read, reader, s_free);
    if (!response) {
        s_free(reader);
    }
    return response;
}

int drv_admin_http_streams_open(void)
{
    return atomic_load(&s_open);
}
