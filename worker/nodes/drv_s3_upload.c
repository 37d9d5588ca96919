/*  drv_s3_upload — see drv_s3_upload.h. */
#include "drv_s3_upload.h"

#include "drover/drv_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ABORT_TIMEOUT_MS 5000 // an abort still running when the exporter ends waits this long

typedef enum { STEP_NONE, STEP_PUT, STEP_CREATE, STEP_PART, STEP_COMPLETE, STEP_ABORT } step_t;

//  One object on its way: filling (its bytes still coming), waiting for
//  its batch's turn, sent (batch set, kept across its attempts), or an
//  abort going on alone once its batch is gone (orphan).
struct upload_t {
    struct upload_t *next;
    drv_export_batch_t *batch; // NULL until its batch is sent
    bool ended;                // every byte of the object is made
    bool orphan;
    bool early_failed; // a part sent while it filled failed: the rest waits for the batch's attempts
    char key[1024];
    char upload_id[512]; // "" until CreateMultipartUpload answered
    drv_buf_t part;      // the part under way, or failed and to be sent again (its own buffer: data grows)
    drv_buf_t data;      // its bytes after those
    size_t parts, taken; // parts S3 took, and their bytes
    char (*etags)[128];
    size_t etag_cap;
    step_t step; // the request under way (easy set)
    CURL *easy;
    struct curl_slist *headers;
    drv_s3_answer_t answer;
    drv_buf_t complete; // CompleteMultipartUpload's body
    double started;     // mono seconds, the attempt's start
};

//  The request of step, started: 0, or -1 when memory ran out.
static int s_request(drv_s3_uploads_t *self, upload_t *u, step_t step)
{
    char query[700] = "";
    const char *method = "PUT";
    const void *body = NULL;
    size_t size = 0;
    drv_buf_t id = {0};
    if (u->upload_id[0] && drv_s3_uri_encode(u->upload_id, strlen(u->upload_id), false, &id) != 0) {
        return -1;
    }
    switch (step) {
    case STEP_PUT:
        body = u->data.data, size = u->data.len;
        break;
    case STEP_CREATE:
        method = "POST";
        snprintf(query, sizeof query, "uploads=");
        break;
    case STEP_PART:
        body = u->part.data, size = u->part.len;
        snprintf(query, sizeof query, "partNumber=%zu&uploadId=%.*s", u->parts + 1, (int)id.len, id.data);
        break;
    case STEP_COMPLETE:
        method = "POST";
        body = u->complete.data, size = u->complete.len;
        snprintf(query, sizeof query, "uploadId=%.*s", (int)id.len, id.data);
        break;
    default:
        method = "DELETE";
        snprintf(query, sizeof query, "uploadId=%.*s", (int)id.len, id.data);
        break;
    }
    drv_buf_free(&id);
    u->easy = drv_s3_request(self->target, method, u->key, query, body, size, &u->answer, &u->headers);
    if (!u->easy) {
        return -1;
    }
    u->step = step;
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
    drv_buf_free(&u->part);
    drv_buf_free(&u->data);
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
        self->bytes += (int64_t)(u->taken + u->data.len); // the parts S3 took, or the PUT's body
        self->parts += (int64_t)u->parts;
    }
    drv_export_sent(self->export, u->batch, verdict, why, secs);
}

//  The step the object is at. While it has no batch (it fills, or waits
//  for its batch's turn) only full parts go, and the upload's creation
//  before them; sent, whatever is next. An object of one part at most
//  goes by one PUT.
static step_t s_next_step(const upload_t *u, size_t *part_len)
{
    bool sent = u->batch != NULL, full = u->data.len >= DRV_S3_PART_BYTES;
    *part_len = 0;
    if (!sent && (u->early_failed || (!full && u->part.len == 0))) {
        return STEP_NONE;
    }
    if (!u->upload_id[0]) {
        bool multipart = full && (!u->ended || u->data.len > DRV_S3_PART_BYTES);
        return multipart ? STEP_CREATE : sent ? STEP_PUT : STEP_NONE;
    }
    if (u->part.len == 0) {
        *part_len = full ? DRV_S3_PART_BYTES : sent ? u->data.len : 0;
    }
    return u->part.len > 0 || *part_len > 0 ? STEP_PART : sent ? STEP_COMPLETE : STEP_NONE;
}

//  Starts the object's next request, if one may go: 0, or -1 when memory ran out.
static int s_go_on(drv_s3_uploads_t *self, upload_t *u)
{
    size_t part_len;
    step_t step = s_next_step(u, &part_len);
    if (step == STEP_NONE) {
        return 0;
    }
    if (part_len > 0) { // the part's bytes into a buffer of their own
        drv_buf_t rest = {0};
        if (drv_buf_append(&rest, u->data.data + part_len, u->data.len - part_len) != 0) {
            return -1;
        }
        u->part = u->data;
        u->part.len = part_len;
        u->data = rest;
    }
    if (step == STEP_COMPLETE && s_complete_body(u) != 0) {
        return -1;
    }
    if (step == STEP_PART && u->parts == u->etag_cap) {
        size_t cap = u->etag_cap ? 2 * u->etag_cap : 8;
        char(*grown)[128] = realloc(u->etags, cap * sizeof *grown);
        if (!grown) {
            return -1;
        }
        u->etags = grown, u->etag_cap = cap;
    }
    return s_request(self, u, step);
}

static void s_go_on_or_retry(drv_s3_uploads_t *self, upload_t *u)
{
    if (s_go_on(self, u) != 0 && u->batch) {
        s_verdict(self, u, DRV_EXPORT_RETRY, "out of memory making a request");
    }
}

//  A request failed: the batch's verdict, or (no batch yet) the rest waits for it.
static void s_failed(drv_s3_uploads_t *self, upload_t *u, bool again, const char *why)
{
    if (!u->batch) {
        u->early_failed = true;
        return;
    }
    //  Given up: drv_export forgets the batch next, and the upload open is aborted.
    s_verdict(self, u, again ? DRV_EXPORT_RETRY : DRV_EXPORT_DROP, why);
}

//  A request finished: the next step, or the batch's verdict.
static void s_finished(drv_s3_uploads_t *self, upload_t *u, CURLcode result)
{
    long status = 0;
    curl_easy_getinfo(u->easy, CURLINFO_RESPONSE_CODE, &status);
    s_stop_request(self, u);
    char why[600];
    if (u->orphan) { // an abort on its own: done, whatever came of it
        bool gone = result == CURLE_OK && ((status >= 200 && status < 300) || status == 404); // 404: NoSuchUpload
        self->aborted += gone && status != 404;
        if (gone) {
            drv_s3_ledger_ended(&self->ledger, u->upload_id);
        }
        s_free(self, u);
        return;
    }
    char code[100] = "";
    drv_s3_xml_text(&u->answer, "Code", code, sizeof code);
    //  CompleteMultipartUpload may answer 200 with an <Error> in the body.
    bool error_body = u->step == STEP_COMPLETE && status >= 200 && status < 300 && strstr(u->answer.body, "<Error>");
    if (result != CURLE_OK) {
        snprintf(why, sizeof why, "s3://%s/%s: %s", self->target->bucket, u->key, curl_easy_strerror(result));
        s_failed(self, u, true, why);
        return;
    }
    if (status < 200 || status >= 300 || error_body) {
        s_why(self, u, status, why, sizeof why);
        s_failed(self, u,
                 status >= 500 || status == 429 || error_body || !strcmp(code, "SlowDown") ||
                     !strcmp(code, "RequestTimeout") || !strcmp(code, "InternalError"),
                 why);
        return;
    }
    switch (u->step) {
    case STEP_CREATE:
        if (!drv_s3_xml_text(&u->answer, "UploadId", u->upload_id, sizeof u->upload_id) || !u->upload_id[0]) {
            snprintf(why, sizeof why, "s3://%s/%s: no UploadId in the answer", self->target->bucket, u->key);
            s_failed(self, u, true, why);
            return;
        }
        drv_s3_ledger_begun(&self->ledger, u->key, u->upload_id);
        s_go_on_or_retry(self, u);
        return;
    case STEP_PART:
        //  S3 has it: the part's bytes go.
        snprintf(u->etags[u->parts++], sizeof u->etags[0], "%s", u->answer.etag);
        u->taken += u->part.len;
        drv_buf_free(&u->part);
        s_go_on_or_retry(self, u);
        return;
    default:
        if (u->upload_id[0]) {
            drv_s3_ledger_ended(&self->ledger, u->upload_id);
        }
        u->upload_id[0] = 0; // whole: nothing to abort any more
        s_verdict(self, u, DRV_EXPORT_DONE, NULL);
    }
}

upload_t *drv_s3_upload_new(drv_s3_uploads_t *self, const char *key)
{
    upload_t *u = calloc(1, sizeof *u);
    if (u) {
        snprintf(u->key, sizeof u->key, "%s", key);
        u->next = self->list;
        self->list = u;
    }
    return u;
}

drv_buf_t *drv_s3_upload_tail(upload_t *u)
{
    return &u->data;
}

void drv_s3_upload_filled(drv_s3_uploads_t *self, upload_t *u, bool ended)
{
    u->ended = ended;
    if (!u->easy) {
        s_go_on(self, u); // out of memory: tried again with more bytes, or by the batch's send
    }
}

int drv_s3_upload_send(drv_s3_uploads_t *self, drv_export_batch_t *batch, upload_t *u, char *err, size_t errlen)
{
    u->batch = batch;
    u->started = drv_time_mono_us() / 1e6;
    //  A part sent while it filled is still under way: its end goes on.
    if (!u->easy && s_go_on(self, u) != 0) {
        snprintf(err, errlen, "out of memory making a request");
        return -1;
    }
    return 0;
}

void drv_s3_upload_forget(drv_s3_uploads_t *self, upload_t *u)
{
    s_stop_request(self, u);
    if (!u->upload_id[0] || s_request(self, u, STEP_ABORT) != 0) {
        s_free(self, u); // S3 lets a forgotten upload go by a lifecycle rule (docs/s3.md)
        return;
    }
    u->batch = NULL;
    u->orphan = true;
    drv_buf_free(&u->part);
    drv_buf_free(&u->data);
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
    *self = (drv_s3_uploads_t){.target = target, .ledger = {.fd = -1}};
    return drv_curl_loop_init(&self->curl);
}

//  An upload a dead instance left open: aborted.
static void s_adopted(void *arg, const char *key, const char *upload_id)
{
    drv_s3_uploads_t *self = arg;
    upload_t *u = drv_s3_upload_new(self, key);
    if (u) {
        snprintf(u->upload_id, sizeof u->upload_id, "%s", upload_id);
        u->orphan = true;
        if (s_request(self, u, STEP_ABORT) != 0) {
            s_free(self, u); // still written down: the next instance tries
        }
    }
}

int drv_s3_uploads_keep(drv_s3_uploads_t *self, const char *base, char *why, size_t whylen)
{
    if (drv_s3_ledger_open(&self->ledger, base, why, whylen) != 0) {
        return -1;
    }
    drv_s3_ledger_adopt(&self->ledger, base, s_adopted, self);
    return 0;
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
    drv_s3_ledger_close(&self->ledger);
    drv_curl_loop_fini(&self->curl);
}
