/*  drv_s3_upload — see drv_s3_upload.h. */
#include "drv_s3_upload.h"

#include "drover/drv_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ABORT_TIMEOUT_MS 5000 // an abort still running when the exporter ends waits this long

typedef enum { STEP_PUT, STEP_CREATE, STEP_PART, STEP_COMPLETE, STEP_ABORT } step_t;

//  One object on its way: the sender's state of a batch (kept across its
//  attempts), or an abort going on alone once its batch is gone.
struct upload_t {
    struct upload_t *next;
    drv_export_batch_t *batch; // NULL: an abort of an upload whose batch went
    char key[1024];
    char upload_id[512]; // "" until CreateMultipartUpload answered
    const char *body;    // the batch's, kept by drv_export until forget
    size_t size;
    size_t parts, done_parts; // multipart: how many, how many S3 took
    char (*etags)[128];
    step_t step;
    CURL *easy;
    struct curl_slist *headers;
    drv_s3_answer_t answer;
    drv_buf_t complete; // CompleteMultipartUpload's body
    double started;     // mono seconds, the attempt's start
};

static void s_start(drv_s3_uploads_t *self, upload_t *u);

//  The request of the upload's step, started: 0, or -1 when memory ran out.
static int s_request(drv_s3_uploads_t *self, upload_t *u)
{
    char query[700] = "";
    const char *method = "PUT";
    const void *body = NULL;
    size_t size = 0;
    drv_buf_t id = {0};
    if (u->upload_id[0] && drv_s3_uri_encode(u->upload_id, strlen(u->upload_id), false, &id) != 0) {
        return -1;
    }
    switch (u->step) {
    case STEP_PUT:
        body = u->body, size = u->size;
        break;
    case STEP_CREATE:
        method = "POST";
        snprintf(query, sizeof query, "uploads=");
        break;
    case STEP_PART: {
        size_t at = u->done_parts * DRV_S3_PART_BYTES;
        body = u->body + at, size = u->size - at < DRV_S3_PART_BYTES ? u->size - at : DRV_S3_PART_BYTES;
        snprintf(query, sizeof query, "partNumber=%zu&uploadId=%.*s", u->done_parts + 1, (int)id.len, id.data);
        break;
    }
    case STEP_COMPLETE:
        method = "POST";
        body = u->complete.data, size = u->complete.len;
        snprintf(query, sizeof query, "uploadId=%.*s", (int)id.len, id.data);
        break;
    case STEP_ABORT:
        method = "DELETE";
        snprintf(query, sizeof query, "uploadId=%.*s", (int)id.len, id.data);
        break;
    }
    drv_buf_free(&id);
    u->easy = drv_s3_request(self->target, method, u->key, query, body, size, &u->answer, &u->headers);
    if (!u->easy) {
        return -1;
    }
    curl_easy_setopt(u->easy, CURLOPT_PRIVATE, (char *)u);
    curl_multi_add_handle(self->curl.multi, u->easy);
    return 0;
}

static void s_stop_request(drv_s3_uploads_t *self, upload_t *u)
{
    if (u->easy) {
        curl_multi_remove_handle(self->curl.multi, u->easy);
        curl_easy_cleanup(u->easy);
        u->easy = NULL;
    }
    curl_slist_free_all(u->headers);
    u->headers = NULL;
}

static void s_unlink(drv_s3_uploads_t *self, upload_t *u)
{
    for (upload_t **p = &self->list; *p; p = &(*p)->next) {
        if (*p == u) {
            *p = u->next;
            return;
        }
    }
}

static void s_free(drv_s3_uploads_t *self, upload_t *u)
{
    s_stop_request(self, u);
    s_unlink(self, u);
    drv_buf_free(&u->complete);
    free(u->etags);
    free(u);
}

//  The XML CompleteMultipartUpload takes: every part's number and ETag.
static int s_complete_body(upload_t *u)
{
    drv_buf_t *b = &u->complete;
    b->len = 0;
    int rc = drv_buf_append(b, "<CompleteMultipartUpload>", 25);
    for (size_t i = 0; i < u->parts && rc == 0; i++) {
        char part[300];
        int n =
            snprintf(part, sizeof part, "<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag></Part>", i + 1, u->etags[i]);
        rc = drv_buf_append(b, part, (size_t)n);
    }
    return rc ? rc : drv_buf_append(b, "</CompleteMultipartUpload>", 26);
}

//  What S3 said, for the log and last_error: its status, Code and Message.
static void s_why(const drv_s3_uploads_t *self, const upload_t *u, long status, char *why, size_t whylen)
{
    char code[100] = "", message[300] = "";
    drv_s3_xml_text(&u->answer, "Code", code, sizeof code);
    drv_s3_xml_text(&u->answer, "Message", message, sizeof message);
    snprintf(why, whylen, "s3://%s/%s: %ld%s%s%s%s", self->target->bucket, u->key, status, code[0] ? " " : "", code,
             message[0] ? ": " : "", message);
}

static void s_verdict(drv_s3_uploads_t *self, upload_t *u, drv_export_verdict_t verdict, const char *why)
{
    double secs = drv_time_mono_us() / 1e6 - u->started;
    if (verdict == DRV_EXPORT_DONE) {
        self->objects++;
        self->bytes += (int64_t)u->size;
        self->parts += (int64_t)u->parts;
    }
    drv_export_sent(self->export, u->batch, verdict, why, secs);
}

//  A request finished: the next step, or the batch's verdict.
static void s_finished(drv_s3_uploads_t *self, upload_t *u, CURLcode result)
{
    long status = 0;
    curl_easy_getinfo(u->easy, CURLINFO_RESPONSE_CODE, &status);
    s_stop_request(self, u);
    char why[600];
    if (!u->batch) { // an abort on its own: done, whatever came of it
        self->aborted += status >= 200 && status < 300;
        s_free(self, u);
        return;
    }
    char code[100] = "";
    drv_s3_xml_text(&u->answer, "Code", code, sizeof code);
    //  CompleteMultipartUpload may answer 200 with an <Error> in the body.
    bool error_body = u->step == STEP_COMPLETE && status >= 200 && status < 300 && strstr(u->answer.body, "<Error>");
    if (result != CURLE_OK) {
        snprintf(why, sizeof why, "s3://%s/%s: %s", self->target->bucket, u->key, curl_easy_strerror(result));
        s_verdict(self, u, DRV_EXPORT_RETRY, why);
        return;
    }
    if (status < 200 || status >= 300 || error_body) {
        s_why(self, u, status, why, sizeof why);
        bool again = status >= 500 || status == 429 || error_body || !strcmp(code, "SlowDown") ||
                     !strcmp(code, "RequestTimeout") || !strcmp(code, "InternalError");
        if (!again && u->upload_id[0]) {
            //  Given up: the parts S3 holds go too (drv_export forgets the batch next).
            u->step = STEP_ABORT;
        }
        s_verdict(self, u, again ? DRV_EXPORT_RETRY : DRV_EXPORT_DROP, why);
        return;
    }
    switch (u->step) {
    case STEP_CREATE:
        if (!drv_s3_xml_text(&u->answer, "UploadId", u->upload_id, sizeof u->upload_id) || !u->upload_id[0]) {
            snprintf(why, sizeof why, "s3://%s/%s: no UploadId in the answer", self->target->bucket, u->key);
            s_verdict(self, u, DRV_EXPORT_RETRY, why);
            return;
        }
        u->step = STEP_PART;
        s_start(self, u);
        return;
    case STEP_PART:
        snprintf(u->etags[u->done_parts], sizeof u->etags[0], "%s", u->answer.etag);
        if (++u->done_parts < u->parts) {
            s_start(self, u);
            return;
        }
        u->step = STEP_COMPLETE;
        if (s_complete_body(u) != 0) {
            s_verdict(self, u, DRV_EXPORT_RETRY, "out of memory completing a multipart upload");
            return;
        }
        s_start(self, u);
        return;
    default:
        u->upload_id[0] = 0; // whole: nothing to abort any more
        s_verdict(self, u, DRV_EXPORT_DONE, NULL);
    }
}

static void s_start(drv_s3_uploads_t *self, upload_t *u)
{
    if (s_request(self, u) != 0) {
        s_verdict(self, u, DRV_EXPORT_RETRY, "out of memory making a request");
    }
}

int drv_s3_upload_send(drv_s3_uploads_t *self, drv_export_batch_t *batch, void **state, const char *key,
                       const char *body, size_t size, char *err, size_t errlen)
{
    upload_t *u = *state;
    if (!u) {
        u = calloc(1, sizeof *u);
        if (!u) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        snprintf(u->key, sizeof u->key, "%s", key);
        u->batch = batch;
        u->body = body;
        u->size = size;
        u->parts = size > DRV_S3_PART_BYTES ? (size + DRV_S3_PART_BYTES - 1) / DRV_S3_PART_BYTES : 0;
        u->etags = u->parts ? calloc(u->parts, sizeof *u->etags) : NULL;
        u->step = u->parts ? STEP_CREATE : STEP_PUT;
        if (u->parts && !u->etags) {
            free(u);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        u->next = self->list;
        self->list = u;
        *state = u;
    }
    u->started = drv_time_mono_us() / 1e6;
    //  Again after a failure: the step that failed is made again (a part,
    //  the completion); an upload S3 refused to go on is made anew.
    if (u->step == STEP_ABORT) {
        u->step = STEP_CREATE, u->upload_id[0] = 0, u->done_parts = 0;
    }
    if (s_request(self, u) != 0) {
        snprintf(err, errlen, "out of memory making a request");
        return -1;
    }
    return 0;
}

void drv_s3_upload_forget(drv_s3_uploads_t *self, void *state)
{
    upload_t *u = state;
    s_stop_request(self, u);
    if (!u->upload_id[0]) {
        s_free(self, u);
        return;
    }
    u->batch = NULL;
    u->step = STEP_ABORT;
    if (s_request(self, u) != 0) {
        s_free(self, u); // S3 lets a forgotten upload go by a lifecycle rule (docs/s3.md)
    }
}

void drv_s3_uploads_run(drv_s3_uploads_t *self)
{
    drv_curl_loop_run(&self->curl);
    CURLMsg *message;
    int left;
    while ((message = curl_multi_info_read(self->curl.multi, &left))) {
        if (message->msg == CURLMSG_DONE) {
            upload_t *u = NULL;
            curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&u);
            s_finished(self, u, message->data.result);
        }
    }
}

int drv_s3_uploads_init(drv_s3_uploads_t *self, const drv_s3_target_t *target)
{
    *self = (drv_s3_uploads_t){.target = target};
    return drv_curl_loop_init(&self->curl);
}

void drv_s3_uploads_fini(drv_s3_uploads_t *self)
{
    int64_t deadline = drv_time_mono_ms() + ABORT_TIMEOUT_MS;
    while (self->list && self->curl.multi && drv_time_mono_ms() < deadline) {
        curl_multi_poll(self->curl.multi, NULL, 0, 100, NULL);
        drv_s3_uploads_run(self);
    }
    while (self->list) {
        s_free(self, self->list);
    }
    drv_curl_loop_fini(&self->curl);
}
