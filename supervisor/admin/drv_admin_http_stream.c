/*  drv_admin_http_stream — a stream as a chunked HTTP body
    (drv_admin_http_stream.h). Suspending from the content reader and
    resuming when data comes is the pattern microhttpd.h gives for "no
    data yet" (returning 0 without suspending would spin). While parked,
    MHD does not notice a client that left: the streams' writers send a
    comment every 15 s, and that write finds out. */
#include "drv_admin_http_stream.h"

#include <malloc.h>
#include <stdlib.h>

typedef struct {
    drv_stream_t *stream;
    drv_httpd_req_t *req; // alive while its response is: the request ends after it
} reader_t;

static int s_open; // streams open, over all connections

static void s_park(void *arg)
{
    drv_httpd_park(((reader_t *)arg)->req);
}

static void s_wake(void *arg)
{
    drv_httpd_wake(((reader_t *)arg)->req);
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
    if (--s_open == 0) {
        malloc_trim(0); // the last stream closed: a flood's memory goes back to the system
    }
}

struct MHD_Response *drv_admin_http_stream_response(drv_stream_t *stream, drv_httpd_req_t *req)
{
    reader_t *reader = calloc(1, sizeof *reader);
    if (!reader) {
        return NULL;
    }
    reader->stream = drv_stream_ref(stream);
    reader->req = req;
    drv_stream_attach(stream, s_wake, reader);
    s_open++;
    struct MHD_Response *response =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, s_read, reader, s_free);
    if (!response) {
        s_free(reader);
    }
    return response;
}
