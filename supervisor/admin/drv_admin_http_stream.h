/*  drv_admin_http_stream — a drv_stream_t as an HTTP body that goes on
    (chunked): MHD's thread reads what the loop queued, parks the connection
    (MHD_suspend_connection) when nothing is there, and the loop's next push
    resumes it. */
#ifndef DRV_ADMIN_HTTP_STREAM_H
#define DRV_ADMIN_HTTP_STREAM_H

#include "drv_stream.h"

#include <microhttpd.h>

//  The response reading stream (it takes a reference); NULL on no memory.
struct MHD_Response *drv_admin_http_stream_response(drv_stream_t *stream, struct MHD_Connection *connection);
//  Streaming responses MHD still holds (stopping waits for them to end).
int drv_admin_http_streams_open(void);

#endif
