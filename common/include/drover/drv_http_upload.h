/*  drv_http_upload — a request body as it arrives, charged to the
    connection policy's body budget byte by byte (never from what
    Content-Length declares: a client that declares 4 MiB and drips holds
    only what it sent). The buffer doubles as it fills, never past the
    declared length at once. */
#ifndef DRV_HTTP_UPLOAD_H
#define DRV_HTTP_UPLOAD_H

#include "drover/drv_conn_policy.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *data; // NUL-terminable: one byte past cap is allocated
    size_t len, cap;
    size_t taken;     // bytes of the budget held
    size_t declared;  // Content-Length, when given (0: none)
    bool too_large;   // past the body limit: the rest is discarded
    bool over_budget; // past the budget (or out of memory): discarded
} drv_http_upload_t;

//  Adds what arrived, unless the body was already given up on (too large,
//  over budget); then its memory and budget are released at once.
void drv_http_upload_add(drv_http_upload_t *upload, drv_conn_policy_t *policy, size_t max_bytes, const char *data,
                         size_t size);
//  Frees the body and gives its budget back; a large one gives its memory
//  back to the system once no body is held.
void drv_http_upload_release(drv_http_upload_t *upload, drv_conn_policy_t *policy);

#endif
