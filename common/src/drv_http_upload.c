/*  drv_http_upload — see the header. */
#include "drover/drv_http_upload.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#define FIRST_BYTES 16384
#define TRIM_AFTER_BYTES (256 * 1024) // a body this large gives memory back once no body is held

void drv_http_upload_release(drv_http_upload_t *upload, drv_conn_policy_t *policy)
{
    bool large = upload->cap >= TRIM_AFTER_BYTES;
    drv_conn_policy_give_body(policy, NULL, upload->taken);
    upload->taken = 0;
    free(upload->data);
    upload->data = NULL;
    upload->len = upload->cap = 0;
    if (large && drv_conn_policy_body_used(policy) == 0) {
        malloc_trim(0); // a burst of large bodies is over
    }
}

void drv_http_upload_add(drv_http_upload_t *upload, drv_conn_policy_t *policy, size_t max_bytes, const char *data,
                         size_t size)
{
    if (upload->too_large || upload->over_budget) {
        return; // discarded
    }
    if (upload->len + size > max_bytes) {
        upload->too_large = true;
        drv_http_upload_release(upload, policy);
        return;
    }
    if (!drv_conn_policy_take_body(policy, NULL, size)) {
        upload->over_budget = true;
        drv_http_upload_release(upload, policy);
        return;
    }
    upload->taken += size;
    if (upload->len + size > upload->cap) {
        size_t cap = upload->cap ? 2 * upload->cap : FIRST_BYTES;
        cap = upload->declared && cap > upload->declared ? upload->declared : cap;
        cap = cap < upload->len + size ? upload->len + size : cap;
        char *grown = realloc(upload->data, cap + 1);
        if (!grown) {
            upload->over_budget = true;
            drv_http_upload_release(upload, policy);
            return;
        }
        upload->data = grown;
        upload->cap = cap;
    }
    memcpy(upload->data + upload->len, data, size);
    upload->len += size;
}
