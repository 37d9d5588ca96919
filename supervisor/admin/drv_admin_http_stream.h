/*  drv_admin_http_stream — a drv_stream_t as an HTTP body that goes on
    (chunked): the server reads what the loop queued, parks the connection
    when nothing is there, and the loop's next push wakes it — all on the
    loop's thread. */
#ifndef DRV_ADMIN_HTTP_STREAM_H
#define DRV_ADMIN_HTTP_STREAM_H

#include "drv_stream.h"

#include "drover/drv_httpd.h"

#include <microhttpd.h>

//  The response reading stream (it takes a reference); NULL on no memory.
struct MHD_Response *drv_admin_http_stream_response(drv_stream_t *stream, drv_httpd_req_t *req);

#endif
