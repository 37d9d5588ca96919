/*  drv_opamp — see drv_opamp.h. The transport and the schedule: one POST
    at a time with libcurl's multi interface (its sockets in one epoll
    descriptor droverd's loop polls), what the answer asks for, when to
    send next. The multi handle runs on droverd's loop (drv_curl_loop). */
#include "drv_opamp_internal.h"

#include "drover/drv_log.h"
#include "drover/drv_secret.h"
#include "drover/drv_time.h"
#include "drover/drv_utf8.h"
#include "drover/drv_version.h"
#include "drv_pbcheck.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_MS 1000 // how often health and config are looked at for a change
#define TIMEOUT_MS 30000

static size_t s_on_body(char *data, size_t size, size_t count, void *arg)
{
    drv_opamp_t *self = arg;
    size_t n = size * count;
    if (self->response_size + n > DRV_OPAMP_RESPONSE_MAX) {
        self->response_too_large = true;
        return 0; // the transfer fails: a larger answer is not read
    }
    uint8_t *grown = realloc(self->response, self->response_size + n);
    if (!grown) {
        return 0;
    }
    memcpy(grown + self->response_size, data, n);
    self->response = grown;
    self->response_size += n;
    return n;
}

drv_opamp_t *drv_opamp_new(drv_engine_t *engine, char *err, size_t errlen)
{
    err[0] = 0;
    if (!engine->config->opamp) {
        return NULL;
    }
    drv_opamp_t *self = calloc(1, sizeof *self);
    self->engine = engine;
    self->config = json_incref(engine->config->opamp);
    int curl = drv_curl_loop_init(&self->curl);
    self->full = true;
    self->state = "connecting";
    if (drv_opamp_uid_load(json_string_value(json_object_get(self->config, "instance_uid_file")), self->uid, err,
                           errlen) != 0 ||
        curl != 0) {
        if (!err[0]) {
            snprintf(err, errlen, "engine.opamp: cannot set up the HTTP client");
        }
        drv_opamp_destroy(&self);
        return NULL;
    }
    char uid[37];
    drv_opamp_uid_text(self->uid, uid);
    drv_info("opamp: agent started endpoint=%s instance_uid=%s",
             json_string_value(json_object_get(self->config, "endpoint")), uid);
    return self;
}

static void s_finish(drv_opamp_t *self)
{
    if (self->easy) {
        curl_multi_remove_handle(self->curl.multi, self->easy);
        curl_easy_cleanup(self->easy);
        self->easy = NULL;
    }
    curl_slist_free_all(self->headers);
    self->headers = NULL;
    free(self->request);
    self->request = NULL;
    free(self->response);
    self->response = NULL;
    self->response_size = 0;
    self->response_too_large = false;
}

void drv_opamp_destroy(drv_opamp_t **self_p)
{
    drv_opamp_t *self = *self_p;
    if (!self) {
        return;
    }
    *self_p = NULL;
    s_finish(self);
    drv_curl_loop_fini(&self->curl);
    free(self->sent.health);
    free(self->sent.effective);
    free(self->sending.health);
    free(self->sending.effective);
    json_decref(self->remote.tracking);
    json_decref(self->remote.groups);
    json_decref(self->config);
    free(self);
}

int drv_opamp_fd(drv_opamp_t *self)
{
    return self ? self->curl.epoll_fd : -1;
}

//  Headers: the config's (references resolved each time: a rotated secret
//  is picked up) and the protocol's.
static struct curl_slist *s_headers(drv_opamp_t *self, char *err, size_t errlen)
{
    struct curl_slist *list = curl_slist_append(NULL, "Content-Type: application/x-protobuf");
    char agent[80];
    snprintf(agent, sizeof agent, "User-Agent: drover/%s", drv_version());
    list = curl_slist_append(list, agent);
    const char *name;
    json_t *value;
    json_object_foreach(json_object_get(self->config, "headers"), name, value)
    {
        char *resolved = drv_secret_resolve(json_string_value(value), err, errlen);
        if (!resolved) {
            curl_slist_free_all(list);
            return NULL;
        }
        char *line = NULL;
        if (asprintf(&line, "%s: %s", name, resolved) >= 0) {
            list = curl_slist_append(list, line);
        }
        free(line);
        free(resolved);
    }
    return list;
}

static void s_failed(drv_opamp_t *self, const char *why, int64_t retry_ms)
{
    self->failures++;
    if (strcmp(self->state, "failing") != 0 || strcmp(self->last_error, why) != 0) {
        drv_warn("opamp: %s", why); // logged when it starts failing, or fails differently
    }
    drv_utf8_snprintf(self->last_error, sizeof self->last_error, "%s", why);
    self->state = "failing";
    self->full = true; // the server may have lost us: tell it everything once it answers
    self->backoff_ms = self->backoff_ms ? self->backoff_ms * 2 : DRV_OPAMP_BACKOFF_MIN_MS;
    if (self->backoff_ms > DRV_OPAMP_BACKOFF_MAX_MS) {
        self->backoff_ms = DRV_OPAMP_BACKOFF_MAX_MS;
    }
    int64_t wait = retry_ms > 0 ? retry_ms : self->backoff_ms;
    self->next_ms = drv_time_mono_ms() + (wait < 600000 ? wait : 600000);
}

static void s_send(drv_opamp_t *self)
{
    drv_opamp_report_t *report = drv_opamp_report_build(self, self->full);
    char err[400] = "out of memory";
    self->headers = report ? s_headers(self, err, sizeof err) : NULL;
    if (!report || !self->headers) {
        drv_opamp_report_free(&report);
        s_failed(self, err, 0);
        return;
    }
    Opamp__Proto__AgentToServer *msg = drv_opamp_report_msg(report);
    Opamp__Proto__RemoteConfigStatus remote;
    uint8_t hash[DRV_OPAMP_HASH_MAX];
    self->sending.remote = self->remote.version;
    if ((self->full || self->sent.remote != self->remote.version) &&
        drv_opamp_remote_report(self, &remote, hash, sizeof hash)) {
        msg->remote_config_status = &remote;
    }
    self->request_size = opamp__proto__agent_to_server__get_packed_size(msg);
    self->request = malloc(self->request_size + 1);
    if (self->request) {
        opamp__proto__agent_to_server__pack(msg, self->request);
    }
    drv_opamp_report_free(&report);
    CURL *easy = self->request ? curl_easy_init() : NULL;
    if (!easy) {
        s_finish(self);
        s_failed(self, "out of memory", 0);
        return;
    }
    curl_easy_setopt(easy, CURLOPT_URL, json_string_value(json_object_get(self->config, "endpoint")));
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, self->request);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)self->request_size);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, self->headers);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)TIMEOUT_MS);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, s_on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, self);
    json_t *tls = json_object_get(self->config, "tls");
    if (json_is_string(json_object_get(tls, "ca_file"))) {
        curl_easy_setopt(easy, CURLOPT_CAINFO, json_string_value(json_object_get(tls, "ca_file")));
    }
    if (json_is_true(json_object_get(tls, "insecure_skip_verify"))) {
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    self->easy = easy;
    self->requests++;
    curl_multi_add_handle(self->curl.multi, easy);
}

//  The server's answer: what it asks for.
static void s_answer(drv_opamp_t *self, Opamp__Proto__ServerToAgent *answer)
{
    if (answer->error_response) {
        Opamp__Proto__ServerErrorResponse *e = answer->error_response;
        char why[600];
        char *message = drv_utf8_sanitize(e->error_message ? e->error_message : "",
                                          e->error_message ? strlen(e->error_message) : 0);
        drv_utf8_snprintf(why, sizeof why, "the server refused the report (%s): %s",
                          e->type == 1   ? "BadRequest"
                          : e->type == 2 ? "Unavailable"
                                         : "Unknown",
                          message ? message : "");
        free(message);
        int64_t retry = e->details_case == OPAMP__PROTO__SERVER_ERROR_RESPONSE__DETAILS_RETRY_INFO && e->retry_info
                            ? (int64_t)(e->retry_info->retry_after_nanoseconds / 1000000u)
                            : 0;
        s_failed(self, why, retry);
        return;
    }
    //  Acknowledged: the server has what was sent.
    free(self->sent.health);
    free(self->sent.effective);
    self->sent = self->sending;
    self->sending = (drv_opamp_sent_t){0};
    self->full = false;
    self->backoff_ms = 0;
    self->state = "connected";
    self->last_error[0] = 0;
    self->next_ms = drv_time_mono_ms() + json_integer_value(json_object_get(self->config, "poll_interval_secs")) * 1000;
    if (answer->agent_identification && answer->agent_identification->new_instance_uid.len == 16) {
        char err[600], uid[37];
        memcpy(self->uid, answer->agent_identification->new_instance_uid.data, 16);
        drv_opamp_uid_text(self->uid, uid);
        drv_info("opamp: the server gave this agent a new instance_uid=%s", uid);
        if (drv_opamp_uid_save(json_string_value(json_object_get(self->config, "instance_uid_file")), self->uid, err,
                               sizeof err) != 0) {
            drv_warn("opamp: %s", err);
        }
        self->full = true;
        self->next_ms = drv_time_mono_ms(); // tell the server everything under the new name
    }
    if (answer->remote_config) {
        drv_opamp_remote_offer(self, answer->remote_config);
    }
    if (answer->flags & 1) { // ReportFullState
        self->full = true;
        self->next_ms = drv_time_mono_ms();
    }
}

static void s_done(drv_opamp_t *self, CURLcode result)
{
    long status = 0;
    curl_easy_getinfo(self->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_off_t retry_after = 0;
    curl_easy_getinfo(self->easy, CURLINFO_RETRY_AFTER, &retry_after);
    const char *url = json_string_value(json_object_get(self->config, "endpoint"));
    char why[800];
    if (self->response_too_large) {
        snprintf(why, sizeof why, "%s answered more than %u bytes: not read", url, DRV_OPAMP_RESPONSE_MAX);
        s_failed(self, why, 0);
    } else if (result != CURLE_OK) {
        snprintf(why, sizeof why, "%s: %s", url, curl_easy_strerror(result));
        s_failed(self, why, 0);
    } else if (status < 200 || status > 299) {
        snprintf(why, sizeof why, "%s answered HTTP %ld", url, status);
        s_failed(self, why, (int64_t)retry_after * 1000);
    } else {
        self->last_contact_ms = drv_time_wall_ms();
        //  Checked before protobuf-c sees it, as every protobuf from outside
        //  (docs/security.md): nesting and what its decode would allocate.
        char bad[300] = "";
        Opamp__Proto__ServerToAgent *answer =
            drv_pbcheck(&opamp__proto__server_to_agent__descriptor, self->response, self->response_size, bad,
                        sizeof bad) == 0
                ? opamp__proto__server_to_agent__unpack(NULL, self->response_size, self->response)
                : NULL;
        if (!answer) {
            snprintf(why, sizeof why, "%s answered %zu bytes that are not a ServerToAgent message%s%s", url,
                     self->response_size, *bad ? ", refused unread: " : "", bad);
            s_failed(self, why, 0);
        } else {
            s_answer(self, answer);
            opamp__proto__server_to_agent__free_unpacked(answer, NULL);
        }
    }
    s_finish(self);
}

int64_t drv_opamp_tick(drv_opamp_t *self)
{
    if (!self) {
        return -1;
    }
    if (!self->restored) {
        self->restored = true;
        drv_opamp_remote_restore(self);
    }
    drv_curl_loop_run(&self->curl);
    CURLMsg *message;
    int left;
    while ((message = curl_multi_info_read(self->curl.multi, &left))) {
        if (message->msg == CURLMSG_DONE && message->easy_handle == self->easy) {
            s_done(self, message->data.result);
        }
    }
    int64_t now = drv_time_mono_ms();
    if (!self->easy) {
        drv_opamp_remote_tick(self); // cheap: what an APPLYING config's rollouts came to
    }
    if (!self->easy && !self->backoff_ms && now >= self->check_ms) {
        //  Between polls: what changed goes at once.
        self->check_ms = now + CHECK_MS;
        char *health = drv_opamp_health_text(self->engine);
        char *effective = drv_opamp_effective_key(self->engine);
        if ((health && (!self->sent.health || strcmp(health, self->sent.health))) ||
            (effective && (!self->sent.effective || strcmp(effective, self->sent.effective)))) {
            self->next_ms = now;
        }
        free(health);
        free(effective);
    }
    if (!self->easy && now >= self->next_ms) {
        s_send(self);
    }
    int64_t wait = self->easy ? -1 : self->next_ms - now;
    if (!self->easy && !self->backoff_ms) {
        int64_t check = self->check_ms - now;
        wait = wait < 0 || check < wait ? check : wait;
    }
    if (self->curl.due_ms >= 0) {
        int64_t curl = self->curl.due_ms - now;
        wait = wait < 0 || curl < wait ? curl : wait;
    }
    return wait < 0 ? (self->easy ? -1 : 0) : wait;
}

json_t *drv_opamp_json(drv_opamp_t *self)
{
    if (!self) {
        return json_pack("{s:b}", "enabled", false);
    }
    char uid[37];
    drv_opamp_uid_text(self->uid, uid);
    json_t *doc = json_pack("{s:b, s:s, s:s, s:s, s:I, s:I, s:I, s:s?}", "enabled", true, "endpoint",
                            json_string_value(json_object_get(self->config, "endpoint")), "instance_uid", uid, "state",
                            self->state, "requests", (json_int_t)self->requests, "failures", (json_int_t)self->failures,
                            "poll_interval_secs",
                            (json_int_t)json_integer_value(json_object_get(self->config, "poll_interval_secs")),
                            "last_error", self->last_error[0] ? self->last_error : NULL);
    json_object_set_new(doc, "remote_config",
                        self->remote.status == DRV_OPAMP_UNSET
                            ? json_null()
                            : json_pack("{s:s, s:s, s:s}", "hash", self->remote.hash, "status",
                                        drv_opamp_remote_status_name(self->remote.status), "error",
                                        self->remote.error));
    if (self->last_contact_ms > 0) {
        char when[40];
        time_t secs = (time_t)(self->last_contact_ms / 1000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
        char text[48];
        snprintf(text, sizeof text, "%s.%03dZ", when, (int)(self->last_contact_ms % 1000));
        json_object_set_new(doc, "last_contact_at", json_string(text));
    } else {
        json_object_set_new(doc, "last_contact_at", json_null());
    }
    return doc;
}
