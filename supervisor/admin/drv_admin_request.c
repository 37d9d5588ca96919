/*  drv_admin_request — freeing requests and responses, and error bodies. */
#include "drv_admin_request.h"

#include "drover/drv_problems.h"
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
    drv_stream_unref(&response->stream);
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
    response->json = drv_problems_error(kind, message);
}
