/*  drv_admin_request — freeing requests and responses, and error bodies. */
#include "drv_admin_request.h"

#include "drover/drv_utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void drv_admin_request_free(drv_admin_request_t *request)
{
    if (request) {
        free(request->path);
        json_decref(request->query);
        json_decref(request->body);
        free(request);
    }
}

void drv_admin_response_clear(drv_admin_response_t *response)
{
    json_decref(response->json);
    free(response->text);
    free(response->location);
    memset(response, 0, sizeof *response);
}

void drv_admin_error(drv_admin_response_t *response, int status, const char *kind, const char *fmt, ...)
{
    char message[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    drv_admin_response_clear(response);
    response->status = status;
    //  Messages quote what the client sent, which need not be UTF-8: a
    //  message jansson would refuse must still make a body.
    char *clean = drv_utf8_sanitize(message, strlen(message));
    response->json = json_pack("{s:{s:s, s:s}}", "error", "kind", kind, "message", clean ? clean : "");
    free(clean);
}
