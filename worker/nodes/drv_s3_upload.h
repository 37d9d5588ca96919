/*  drv_s3_upload — objects written to S3 as drv_export's sender
    (drv_export.h) for exporter:s3 (docs/s3.md, "Uploads"): an object of
    at most DRV_S3_PART_BYTES goes by one PUT, a larger one by a multipart
    upload (create, its parts one by one, complete). Its batch is told done
    only when S3 answered the PUT or the completion with success; retried
    on connection errors, 5xx, 429 and SlowDown (the step that failed is
    made again); given up on any other 4xx with S3's Code and Message.
    An upload its batch leaves open (given up, handed over, the exporter
    ending) is aborted, so no half object is ever listed. Requests are
    libcurl's, on the instance's loop. */
#ifndef DRV_S3_UPLOAD_H
#define DRV_S3_UPLOAD_H

#include "drv_export.h"
#include "drv_s3_request.h"

#include "drover/drv_curl_loop.h"

#include <stdint.h>

#define DRV_S3_PART_BYTES (8 * 1024 * 1024)

typedef struct upload_t upload_t;

typedef struct {
    drv_export_t *export; // whose batches they are
    const drv_s3_target_t *target;
    drv_curl_loop_t curl;
    upload_t *list; // every upload with a request under way or waiting to abort
    int64_t objects, bytes, parts, aborted;
} drv_s3_uploads_t;

//  0, or -1 (no descriptor, no memory): fini it either way.
int drv_s3_uploads_init(drv_s3_uploads_t *self, const drv_s3_target_t *target);
//  The aborts still going get a few seconds before they are let go.
void drv_s3_uploads_fini(drv_s3_uploads_t *self);

//  drv_export_sender_t's send: the batch's object (body, size) written
//  under key (its first attempt; NULL after), or its failed step made
//  again. 0, or -1 with err.
int drv_s3_upload_send(drv_s3_uploads_t *self, drv_export_batch_t *batch, void **state, const char *key,
                       const char *body, size_t size, char *err, size_t errlen);
//  ...forget: the batch goes; an upload it leaves open is aborted.
void drv_s3_upload_forget(drv_s3_uploads_t *self, void *state);
//  ...run: what libcurl finished, taken on to the next step or a verdict.
void drv_s3_uploads_run(drv_s3_uploads_t *self);

#endif
