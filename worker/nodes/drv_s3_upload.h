/*  drv_s3_upload — objects written to S3 as drv_export's sender
    (drv_export.h) for exporter:s3 (docs/s3.md, "Uploads"). An object's
    bytes come as they are made: once DRV_S3_PART_BYTES of them wait, a
    multipart upload begins and its parts go one by one while the object
    still fills, each let go once S3 took it; an object that ends smaller
    goes by one PUT. Its batch is told done only when S3 answered the PUT
    or the completion with success; retried on connection errors, 5xx, 429
    and SlowDown (the step that failed is made again); given up on any
    other 4xx with S3's Code and Message. A part sent while the object
    fills that fails waits for the batch's own attempts. An upload its
    batch leaves open (given up, handed over, the exporter ending) is
    aborted, so no half object is ever listed. Requests are libcurl's, on
    the instance's loop. */
#ifndef DRV_S3_UPLOAD_H
#define DRV_S3_UPLOAD_H

#include "drv_buf.h"
#include "drv_export.h"
#include "drv_s3_ledger.h"
#include "drv_s3_request.h"

#include "drover/drv_curl_loop.h"

#include <stdbool.h>
#include <stdint.h>

#define DRV_S3_PART_BYTES (8 * 1024 * 1024)

typedef struct upload_t upload_t;

typedef struct {
    drv_export_t *export; // whose batches they are
    const drv_s3_target_t *target;
    drv_curl_loop_t curl;
    upload_t *list; // every upload with a request under way or waiting to abort
    drv_s3_ledger_t ledger;
    int64_t objects, bytes, parts, aborted;
} drv_s3_uploads_t;

//  0, or -1 (no descriptor, no memory): fini it either way.
int drv_s3_uploads_init(drv_s3_uploads_t *self, const drv_s3_target_t *target);
//  The aborts still going get a few seconds before they are let go.
void drv_s3_uploads_fini(drv_s3_uploads_t *self);
//  Multipart uploads are written down beside base (drv_s3_ledger.h), and
//  those that dead instances left open are aborted. 0, or -1 with why
//  (they are then not written down).
int drv_s3_uploads_keep(drv_s3_uploads_t *self, const char *base, char *why, size_t whylen);

//  An object to be written under key, its bytes to come: NULL when memory
//  ran out.
upload_t *drv_s3_upload_new(drv_s3_uploads_t *self, const char *key);
//  Where the object's next bytes are appended by its maker.
drv_buf_t *drv_s3_upload_tail(upload_t *u);
//  Bytes were appended (ended: they are all there): a part that is full
//  goes now.
void drv_s3_upload_filled(drv_s3_uploads_t *self, upload_t *u, bool ended);
//  drv_export_sender_t's send: the batch's object (ended) written, or its
//  failed step made again. 0, or -1 with err.
int drv_s3_upload_send(drv_s3_uploads_t *self, drv_export_batch_t *batch, upload_t *u, char *err, size_t errlen);
//  ...forget: the batch (or the object) goes; an upload it leaves open is
//  aborted.
void drv_s3_upload_forget(drv_s3_uploads_t *self, upload_t *u);
//  ...run: what libcurl finished, taken on to the next step or a verdict.
void drv_s3_uploads_run(drv_s3_uploads_t *self);

#endif
