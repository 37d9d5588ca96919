/*  drv_admin_http_answer — an admin response as an HTTP answer: the JSON or
    text body, Content-Type, Location, Allow, Retry-After and, for 401,
    WWW-Authenticate. */
#include "drv_admin_http_answer.h"
#include "drv_admin_http_stream.h"

#include "drover/drv_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void s_headers(struct MHD_Response *resp, const drv_admin_response_t *r)
{
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type ? r->content_type : "application/json");
    if (r->content_type && !strncmp(r->content_type, "text/html", 9)) {
        //  The console: its own inline script and style, talking only to
        //  this server, in nobody's frame.
        MHD_add_response_header(resp, "Content-Security-Policy",
                                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                                "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
                                "frame-ancestors 'none'");
        MHD_add_response_header(resp, "X-Frame-Options", "DENY");
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    }
    if (r->stream) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        MHD_add_response_header(resp, "X-Accel-Buffering", "no"); // nginx in front: do not buffer
    }
    if (r->location) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, r->location);
    }
    if (r->allow) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
    }
    if (r->retry_after_secs > 0) {
        char secs[16];
        snprintf(secs, sizeof secs, "%d", r->retry_after_secs);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, secs);
    }
    if (r->status == 401) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    }
}

void drv_admin_http_answer(drv_httpd_req_t *req, drv_admin_response_t *r)
{
    if (r->stream) {
        drv_httpd_streaming(req);
        struct MHD_Response *resp = drv_admin_http_stream_response(r->stream, req);
        if (resp) {
            s_headers(resp, r);
        }
        drv_httpd_answer(req, (unsigned int)r->status, resp); // NULL: no memory, the connection closes
        return;
    }
    char *text = NULL;
    size_t len;
    if (r->json) {
        text = json_dumps(r->json, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!text) { // cannot happen with checked input; never send an empty 200
            drv_error("http: cannot serialise a %d answer", r->status);
            r->status = 500;
            text = strdup("{\"error\":{\"kind\":\"internal\",\"message\":\"cannot serialise the answer\"}}");
        }
        len = text ? strlen(text) : 0;
        char *grown = text ? realloc(text, len + 2) : NULL;
        if (!grown) {
            free(text);
            drv_httpd_answer(req, (unsigned int)r->status, NULL);
            return;
        }
        text = grown;
        text[len++] = '\n';
        text[len] = 0;
    } else {
        text = strdup(r->text ? r->text : "");
        len = text ? strlen(text) : 0;
    }
    struct MHD_Response *resp = text ? MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE) : NULL;
    if (resp) {
        s_headers(resp, r);
    } else {
        free(text);
    }
    drv_httpd_answer(req, (unsigned int)r->status, resp);
}

void drv_admin_http_refuse(drv_httpd_req_t *req, int status, const char *kind, const char *message,
                           int retry_after_secs)
{
    drv_admin_response_t response = {0};
    drv_admin_error(&response, status, kind, "%s", message);
    response.retry_after_secs = retry_after_secs;
    drv_admin_http_answer(req, &response);
    drv_admin_response_clear(&response);
}
