/*  drv_export_post — posting closed batches with libcurl's multi interface
    on the instance's loop (drv_curl_loop: one epoll descriptor the worker
    polls). What came of each post decides the batch's fate (drv_export.h). */
#include "drv_export_internal.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"
#include "drover/drv_version.h"

#include <stdlib.h>
#include <string.h>

static size_t s_on_response(char *data, size_t size, size_t count, void *arg)
{
    batch_t *batch = arg;
    size_t n = size * count;
    size_t room = RESPONSE_KEPT - batch->response_len;
    size_t kept = n < room ? n : room;
    memcpy(batch->response + batch->response_len, data, kept);
    batch->response_len += kept;
    batch->response[batch->response_len] = 0;
    return n;
}

//  ---------------------------------------------------------------- posting

void drv_export_finish(drv_export_t *self, batch_t *batch)
{
    if (batch->easy) {
        curl_multi_remove_handle(self->curl.multi, batch->easy);
        curl_easy_cleanup(batch->easy);
        batch->easy = NULL;
        curl_slist_free_all(batch->headers);
        batch->headers = NULL;
    }
    batch->sending = false;
    self->in_flight--;
}

static void s_retry_later(drv_export_t *self, batch_t *batch, const char *why, int64_t retry_after_ms);
static void s_settle(drv_export_t *self, batch_t *batch, drv_export_verdict_t verdict, const char *why,
                     int64_t retry_after_ms);

//  A kind that sends its batches itself (drv_export_sender_t).
static void s_send(drv_export_t *self, batch_t *batch)
{
    char err[300] = "";
    if (batch->first_attempt_ms == 0) {
        batch->first_attempt_ms = drv_time_mono_ms();
    }
    batch->sending = true;
    self->in_flight++;
    int rc =
        self->format.sender->send(self->format.arg, batch, &batch->sent, batch->body, batch->size, err, sizeof err);
    if (rc != 0) {
        drv_export_finish(self, batch);
    }
    if (rc > 0) {
        s_settle(self, batch, DRV_EXPORT_DONE, NULL, 0); // nothing was left to send
    } else if (rc < 0) {
        s_retry_later(self, batch, err, 0);
    }
}

static void s_post(drv_export_t *self, batch_t *batch)
{
    if (self->format.sender) {
        s_send(self, batch);
        return;
    }
    const drv_export_settings_t *settings = &self->settings;
    CURL *easy = curl_easy_init();
    struct curl_slist *headers = NULL;
    if (!easy) {
        batch->next_attempt_ms = drv_time_mono_ms() + batch->backoff_ms;
        return;
    }
    const drv_export_lane_t *lane = &self->format.lanes[batch->lane];
    curl_easy_setopt(easy, CURLOPT_URL, lane->url);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, batch->body);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)batch->size);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)settings->timeout_ms);
    char agent[64];
    snprintf(agent, sizeof agent, "drover/%s", drv_version());
    curl_easy_setopt(easy, CURLOPT_USERAGENT, agent); // copied
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, s_on_response);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, batch);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, batch);
    if (settings->ca_file) {
        curl_easy_setopt(easy, CURLOPT_CAINFO, settings->ca_file);
    }
    if (settings->insecure) {
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (self->format.grpc) {
        headers = drv_export_grpc_setup(easy, batch, lane->url, settings->gzip, settings->timeout_ms, headers);
    } else {
        char content_type[200];
        snprintf(content_type, sizeof content_type, "Content-Type: %s", lane->content_type);
        headers = curl_slist_append(headers, content_type);
        headers = curl_slist_append(headers, "Expect:"); // no 100-continue round trip
        if (settings->gzip) {
            headers = curl_slist_append(headers, "Content-Encoding: gzip");
        }
        for (const char *const *h = self->format.headers; h && *h; h++) {
            headers = curl_slist_append(headers, *h);
        }
    }
    for (struct curl_slist *h = settings->headers; h; h = h->next) {
        headers = curl_slist_append(headers, h->data);
    }
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    batch->headers = headers; // lives as long as the handle
    batch->response_len = 0;
    batch->response[0] = 0;
    batch->easy = easy;
    batch->sending = true;
    if (batch->first_attempt_ms == 0) {
        batch->first_attempt_ms = drv_time_mono_ms();
    }
    self->in_flight++;
    curl_multi_add_handle(self->curl.multi, easy);
}

//  Drops a batch for good: its records count as errors, the only way
//  records become errors in an exporter (docs/operations.md: attempts that
//  will be retried are retries, what waits is the backlog).
static void s_drop(drv_export_t *self, batch_t *batch, const char *why)
{
    size_t records = batch->records - batch->gave_up;
    drv_node_export_error(self->node, records, why);
    if (batch->failing) {
        drv_warn("export gave up node=%s records=%zu reason=\"%s\"", self->node->id, records, why);
    }
    drv_node_count_gave_up(self->node, records);
    drv_node_inputs_gave_up(self->node, batch->inputs, batch->input_count);
    drv_export_unlink(self, batch);
    drv_export_batch_free(self, batch);
}

static void s_retry_later(drv_export_t *self, batch_t *batch, const char *why, int64_t retry_after_ms)
{
    int64_t now = drv_time_mono_ms();
    const drv_export_settings_t *settings = &self->settings;
    if (settings->max_elapsed_ms > 0 && now - batch->first_attempt_ms >= settings->max_elapsed_ms) {
        char message[400];
        snprintf(message, sizeof message, "%s; still failing after retry.max_elapsed_secs (%lld s)", why,
                 (long long)(settings->max_elapsed_ms / 1000));
        s_drop(self, batch, message);
        return;
    }
    drv_node_export_warn(self->node, batch->records, why); // a retry, not an error: logged every 5 s
    batch->failing = true;
    self->catching_up = true;
    drv_node_count_retry(self->node);
    int64_t wait = batch->backoff_ms * (80 + rand_r(&self->seed) % 41) / 100; // ±20%
    if (retry_after_ms > 0) {
        //  Honoured, but a backend does not get to park a batch for ever.
        wait = retry_after_ms < DRV_EXPORT_RETRY_AFTER_MAX_MS ? retry_after_ms : DRV_EXPORT_RETRY_AFTER_MAX_MS;
    }
    //  The last attempt is at the max_elapsed deadline, never after it: a
    //  batch is given up on time whatever it was told to wait.
    if (settings->max_elapsed_ms > 0 && now + wait > batch->first_attempt_ms + settings->max_elapsed_ms) {
        wait = batch->first_attempt_ms + settings->max_elapsed_ms - now;
    }
    batch->next_attempt_ms = now + wait;
    batch->backoff_ms = batch->backoff_ms * 2 > settings->max_ms ? settings->max_ms : batch->backoff_ms * 2;
}

//  What an attempt's verdict means for its batch.
static void s_settle(drv_export_t *self, batch_t *batch, drv_export_verdict_t verdict, const char *why,
                     int64_t retry_after_ms)
{
    if (verdict == DRV_EXPORT_RETRY) {
        s_retry_later(self, batch, why, retry_after_ms);
    } else if (verdict == DRV_EXPORT_DROP) {
        s_drop(self, batch, why);
    } else {
        if (batch->failing) {
            drv_info("export recovered node=%s records=%zu", self->node->id, batch->records);
        }
        drv_node_count_out(self->node, batch->records - batch->gave_up);
        drv_export_unlink(self, batch);
        drv_export_batch_free(self, batch);
    }
}

void drv_export_gave_up(drv_export_t *self, batch_t *batch, size_t records, const char *why)
{
    records = records > batch->records - batch->gave_up ? batch->records - batch->gave_up : records;
    batch->gave_up += records;
    drv_node_export_error(self->node, records, why);
    drv_warn("export gave up node=%s records=%zu reason=\"%s\"", self->node->id, records, why);
    drv_node_count_gave_up(self->node, records);
    drv_node_inputs_gave_up(self->node, batch->inputs, batch->input_count); // which of them: not known
}

void drv_export_sent(drv_export_t *self, batch_t *batch, drv_export_verdict_t verdict, const char *why, double secs)
{
    drv_node_observe(self->node, secs);
    drv_export_finish(self, batch);
    s_settle(self, batch, verdict, why, 0);
}

//  What became of a posted batch.
static void s_done(drv_export_t *self, batch_t *batch, CURLcode result)
{
    long status = 0;
    curl_off_t retry_after_secs = 0;
    curl_easy_getinfo(batch->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(batch->easy, CURLINFO_RETRY_AFTER, &retry_after_secs);
    curl_off_t took_us = 0;
    if (curl_easy_getinfo(batch->easy, CURLINFO_TOTAL_TIME_T, &took_us) == CURLE_OK) {
        drv_node_observe(self->node, (double)took_us / 1e6);
    }
    drv_export_finish(self, batch);
    char why[RESPONSE_KEPT + 200];
    if (result != CURLE_OK) {
        snprintf(why, sizeof why, "%s: %s", self->format.lanes[batch->lane].url, curl_easy_strerror(result));
        s_retry_later(self, batch, why, 0);
        return;
    }
    if (self->format.grpc) {
        int64_t retry_ms;
        char grpc_why[RESPONSE_KEPT + 100];
        drv_export_verdict_t verdict = drv_export_grpc_verdict(batch, status, grpc_why, sizeof grpc_why, &retry_ms);
        snprintf(why, sizeof why, "%s %s", self->format.lanes[batch->lane].url, grpc_why);
        s_settle(self, batch, verdict, why, retry_ms);
        return;
    }
    if (status >= 200 && status < 300) {
        s_settle(self, batch, DRV_EXPORT_DONE, NULL, 0);
        return;
    }
    for (char *c = batch->response; *c; c++) {
        *c = *c == '"' ? '\'' : (unsigned char)*c < 0x20 ? ' ' : *c; // one quotable log line
    }
    snprintf(why, sizeof why, "%s answered %ld%s%s", self->format.lanes[batch->lane].url, status,
             batch->response_len ? ": " : "", batch->response);
    bool again = status == 429 || status == 502 || status == 503 || status == 504;
    s_settle(self, batch, again ? DRV_EXPORT_RETRY : DRV_EXPORT_DROP, why, (int64_t)retry_after_secs * 1000);
}

//  Hands curl what is ready, collects what finished, closes the batches
//  that are due and posts the ones waiting.
void drv_export_run(drv_export_t *self)
{
    if (self->format.sender) {
        self->format.sender->run(self->format.arg);
    } else {
        drv_curl_loop_run(&self->curl);
    }
    CURLMsg *message;
    int left;
    while (!self->format.sender && (message = curl_multi_info_read(self->curl.multi, &left))) {
        if (message->msg == CURLMSG_DONE) {
            batch_t *batch = NULL;
            curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&batch);
            s_done(self, batch, message->data.result);
        }
    }
    int64_t now = drv_time_mono_ms();
    for (int i = 0; i < DRV_EXPORT_LANES; i++) {
        lane_t *lane = &self->lanes[i];
        if (lane->count > 0 &&
            (self->draining || self->flushing || now - lane->opened_ms >= self->settings.max_delay_ms)) {
            drv_export_close(self, i);
        }
    }
    self->flushing = false;
    self->catching_up &= self->head != NULL;
    unsigned seen = 0;
    for (batch_t *batch = self->head, *next; batch && self->in_flight < drv_export_in_flight(self); batch = next) {
        next = batch->next;
        if (!drv_export_lane_turn(self, batch, &seen)) {
            continue; // its lane's older batch goes first
        }
        char err[200] = "out of memory";
        if (!batch->body && !batch->sending && batch->next_attempt_ms <= now &&
            drv_export_encode(self, batch, err, sizeof err) != 0) {
            s_drop(self, batch, err); // it cannot be encoded: dropped and counted
            continue;
        }
        if (!batch->sending && batch->next_attempt_ms <= now) {
            s_post(self, batch);
        }
        if (batch->failing) {
            //  A batch being retried goes first and alone: the ones behind it
            //  wait, so a backend that comes back gets the backlog in order
            //  (docs/operations.md, "Exporter queues").
            break;
        }
    }
}
