/*  exporter:kafka — records to a Kafka topic (docs/operations.md, "Kafka"):
    librdkafka's idempotent producer (acks=all) on the instance's loop.
    Batching, the queue, retries and settling are drv_export's
    (drv_export.h); this file encodes a batch into messages and sends them
    (a drv_export_sender_t; drv_kafka_body.c makes the messages). A batch
    is done when the delivery report of each of its messages says
    written; a message librdkafka gave up on (timeout_ms) makes the batch
    fail, and the next attempt sends again only the messages not written.
    A broker that is down is the backlog of any backend: the batches wait
    in the queue, and with a disk buffer in the log, never blocking the
    other exporters. A message too large to be written (a request split
    down to one record, docs/operations.md "Kafka") is given up at once,
    its records counted, and never retried. */
#include "drv_export.h"
#include "drv_kafka.h"
#include "drv_kafka_body.h"
#include "drv_node.h"
#include "drv_otlp_build.h"
#include "drv_schemas.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <stdlib.h>
#include <string.h>

#define KAFKA_SIGNALS 3 // a topic, a lane each: logs, traces, metrics

#define BATCHES_SENT 16 // batches with librdkafka at a time

typedef struct kafka_out_t kafka_out_t;
typedef struct sent_t sent_t;

typedef struct {
    sent_t *sent;
    uint32_t index;
    uint32_t records; // how many the message holds
} message_ref_t;

enum { UNWRITTEN, WRITTEN, GIVEN_UP }; // sent_t.written

//  A batch with the producer: which of its messages are written, and how
//  many of this attempt's are not reported yet.
struct sent_t {
    drv_export_batch_t *batch; // NULL once drv_export let it go (freed when the last report is in)
    sent_t *next, *prev;       // every state (freed at the end)
    uint32_t messages, outstanding;
    uint8_t *written; // each message's: UNWRITTEN, WRITTEN, GIVEN_UP
    message_ref_t *refs;
    int64_t started_us;
    char why[300]; // why this attempt failed ("" while none did)
    //  The body, copied once: librdkafka reads its messages where they
    //  are, and the batch may go (a drain hands it over) before it did.
    char *body;
    size_t size;
};

struct kafka_out_t {
    drv_export_t *export; // first: drv_export's hooks find it there
    drv_node_t *node;
    rd_kafka_t *rk;
    rd_kafka_topic_t *topics[KAFKA_SIGNALS];
    drv_kafka_wake_t wake;
    drv_kafka_format_t format;
    bool keyed;
    drv_record_path_t key;
    size_t max_message_bytes; // librdkafka's message.max.bytes
    sent_t *states;
    rd_kafka_message_t *scratch; // a batch's messages as librdkafka takes them
    size_t scratch_cap;
};

static int s_encode(void *arg, int lane, const msgpack_object *records, size_t count, drv_buf_t *body, char *err,
                    size_t errlen)
{
    kafka_out_t *self = arg;
    if (drv_kafka_body_write(self->format, self->keyed ? &self->key : NULL, lane, records, count,
                             self->max_message_bytes, body) != 0) {
        snprintf(err, errlen, "out of memory encoding");
        return -1;
    }
    return 0;
}

//  ---------------------------------------------------------------- sending

static void s_state_free(kafka_out_t *self, sent_t *sent)
{
    if (sent->prev) {
        sent->prev->next = sent->next;
    } else {
        self->states = sent->next;
    }
    if (sent->next) {
        sent->next->prev = sent->prev;
    }
    free(sent->written);
    free(sent->refs);
    free(sent->body);
    free(sent);
}

static sent_t *s_state_new(kafka_out_t *self, drv_export_batch_t *batch, const char *body, size_t size)
{
    uint32_t messages = 0;
    drv_kafka_reading_t r = {body, body + size};
    drv_kafka_message_t message;
    while (drv_kafka_body_next(&r, &message)) {
        messages++;
    }
    sent_t *sent = calloc(1, sizeof *sent);
    if (sent) {
        sent->written = calloc(messages ? messages : 1, 1);
        sent->refs = calloc(messages ? messages : 1, sizeof *sent->refs);
        sent->body = malloc(size ? size : 1);
    }
    if (!sent || !sent->written || !sent->refs || !sent->body) {
        if (sent) {
            free(sent->written);
            free(sent->refs);
            free(sent->body);
            free(sent);
        }
        return NULL;
    }
    memcpy(sent->body, body, size);
    sent->size = size;
    sent->batch = batch;
    sent->messages = messages;
    sent->next = self->states;
    if (self->states) {
        self->states->prev = sent;
    }
    self->states = sent;
    return sent;
}

//  A message that can never be written (MSG_SIZE_TOO_LARGE, from librdkafka
//  or a broker): its records given up at once, not retried.
static void s_give_up(kafka_out_t *self, const message_ref_t *ref, rd_kafka_topic_t *topic)
{
    sent_t *sent = ref->sent;
    sent->written[ref->index] = GIVEN_UP;
    if (sent->batch) {
        char why[400];
        snprintf(why, sizeof why,
                 "topic %s: a message of %u records is larger than max_message_bytes (%zu) or the broker's "
                 "message.max.bytes: never written",
                 rd_kafka_topic_name(topic), ref->records, self->max_message_bytes);
        drv_export_gave_up(self->export, sent->batch, ref->records, why);
    }
}

static int s_send(void *arg, drv_export_batch_t *batch, void **state, const char *body, size_t size, char *err,
                  size_t errlen)
{
    kafka_out_t *self = arg;
    sent_t *sent = *state ? *state : s_state_new(self, batch, body, size);
    if (!sent) {
        snprintf(err, errlen, "out of memory sending a batch");
        return -1;
    }
    *state = sent;
    sent->why[0] = 0;
    sent->started_us = drv_time_mono_us();
    rd_kafka_topic_t *topic = self->topics[drv_export_batch_lane(batch)];
    if (sent->messages > self->scratch_cap) {
        rd_kafka_message_t *grown = realloc(self->scratch, sent->messages * sizeof *grown);
        if (!grown) {
            snprintf(err, errlen, "out of memory sending a batch");
            return -1;
        }
        self->scratch = grown;
        self->scratch_cap = sent->messages;
    }
    //  The messages not written yet, given to librdkafka at once: it reads
    //  its clocks and locks the topic once for all of them.
    int count = 0;
    drv_kafka_reading_t r = {sent->body, sent->body + sent->size};
    drv_kafka_message_t message;
    for (uint32_t i = 0; drv_kafka_body_next(&r, &message); i++) {
        if (sent->written[i] != UNWRITTEN) {
            continue; // written (or given up) by an attempt before
        }
        sent->refs[i] = (message_ref_t){sent, i, (uint32_t)message.records};
        self->scratch[count++] = (rd_kafka_message_t){.payload = (void *)message.value,
                                                      .len = message.value_len,
                                                      .key = (void *)message.key,
                                                      .key_len = message.key_len,
                                                      ._private = &sent->refs[i]};
    }
    rd_kafka_produce_batch(topic, RD_KAFKA_PARTITION_UA, 0, self->scratch, count); // not copied: sent->body lives on
    bool waits = false;
    for (int k = 0; k < count; k++) {
        rd_kafka_resp_err_t refused = self->scratch[k].err;
        if (refused == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) {
            s_give_up(self, self->scratch[k]._private, topic);
        } else if (refused != RD_KAFKA_RESP_ERR_NO_ERROR) { // it waits for the next attempt
            snprintf(sent->why, sizeof sent->why, "topic %s: %s", rd_kafka_topic_name(topic),
                     rd_kafka_err2str(refused));
            waits = true;
        } else {
            sent->outstanding++;
        }
    }
    if (sent->outstanding == 0 && !waits) {
        return 1; // every message left was given up
    }
    if (sent->outstanding == 0) {
        snprintf(err, errlen, "%s", sent->why[0] ? sent->why : "nothing to send");
        return -1;
    }
    return 0;
}

static void s_forget(void *arg, void *state)
{
    kafka_out_t *self = arg;
    sent_t *sent = state;
    sent->batch = NULL;
    if (sent->outstanding == 0) {
        s_state_free(self, sent);
    }
}

//  A message's delivery report (rd_kafka_poll, on the loop).
static void s_delivered(rd_kafka_t *rk, const rd_kafka_message_t *message, void *opaque)
{
    (void)rk;
    kafka_out_t *self = opaque;
    message_ref_t *ref = message->_private;
    sent_t *sent = ref->sent;
    if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        sent->written[ref->index] = WRITTEN;
    } else if (message->err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) {
        s_give_up(self, ref, message->rkt);
    } else {
        snprintf(sent->why, sizeof sent->why, "topic %s: %s", rd_kafka_topic_name(message->rkt),
                 rd_kafka_err2str(message->err));
    }
    if (--sent->outstanding > 0) {
        return;
    }
    if (!sent->batch) {
        s_state_free(self, sent); // let go while with the producer
        return;
    }
    uint32_t written = 0;
    for (uint32_t i = 0; i < sent->messages; i++) {
        written += sent->written[i] != UNWRITTEN;
    }
    double secs = (double)(drv_time_mono_us() - sent->started_us) / 1e6;
    drv_export_verdict_t verdict = written == sent->messages ? DRV_EXPORT_DONE : DRV_EXPORT_RETRY;
    drv_export_sent(self->export, sent->batch, verdict, sent->why, secs);
}

//  Errors of the client as a whole. Those that stop every write (no
//  broker reachable, TLS or SASL refused, a fatal one of the idempotent
//  producer) are said, and the node counts as failing until a batch is
//  written again; a single connection lost (a broker closing an idle one)
//  is librdkafka's to mend, and only said when debugging.
static void s_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    kafka_out_t *self = opaque;
    char why[400];
    snprintf(why, sizeof why, "%s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char fatal[300];
        rd_kafka_fatal_error(rk, fatal, sizeof fatal);
        snprintf(why, sizeof why, "fatal: %s", fatal);
    }
    bool stops = err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || err == RD_KAFKA_RESP_ERR__FATAL ||
                 err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR__SSL ||
                 err == RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED ||
                 err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
                 err == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED;
    if (stops) {
        drv_node_export_warn(self->node, 0, why);
    } else {
        drv_debug("kafka node=%s %s", self->node->id, why);
    }
}

static int s_fd(void *arg)
{
    kafka_out_t *self = arg;
    return self->wake.fds[0];
}

static void s_serve(void *arg)
{
    kafka_out_t *self = arg;
    drv_kafka_wake_clear(&self->wake);
    while (rd_kafka_poll(self->rk, 0) > 0) { // each serves what is queued: the queue is empty after
    }
}

static const drv_export_sender_t s_sender = {
    .send = s_send, .forget = s_forget, .fd = s_fd, .run = s_serve, .in_flight = BATCHES_SENT};

//  ---------------------------------------------------------------- the node

static const char *const s_signals[KAFKA_SIGNALS] = {"logs", "traces", "metrics"};

//  topic with {signal} as lane's signal.
static int s_topic_name(const char *topic, int lane, char *out, size_t outlen)
{
    size_t used = 0;
    for (const char *c = topic; *c; c++) {
        const char *piece = c;
        size_t len = 1;
        if (!strncmp(c, "{signal}", 8)) {
            piece = s_signals[lane];
            len = strlen(piece);
            c += 7;
        }
        if (used + len >= outlen) {
            return -1;
        }
        memcpy(out + used, piece, len);
        used += len;
    }
    out[used] = 0;
    return 0;
}

static int s_producer(kafka_out_t *self, drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    char why[600], timeout[32];
    rd_kafka_conf_t *conf = drv_kafka_conf(config, why, sizeof why);
    snprintf(timeout, sizeof timeout, "%lld", (long long)json_integer_value(json_object_get(config, "timeout_ms")));
    int rc = conf ? 0 : -1;
    rc = rc ? rc : drv_kafka_set(conf, "enable.idempotence", "true", why, sizeof why);
    rc = rc ? rc : drv_kafka_set(conf, "acks", "all", why, sizeof why);
    rc = rc ? rc
            : drv_kafka_set(conf, "compression.codec", json_string_value(json_object_get(config, "compression")), why,
                            sizeof why);
    rc = rc ? rc : drv_kafka_set(conf, "message.timeout.ms", timeout, why, sizeof why);
    rc = rc ? rc : drv_kafka_set(conf, "linger.ms", "5", why, sizeof why);
    char max_bytes[32];
    snprintf(max_bytes, sizeof max_bytes, "%zu", self->max_message_bytes);
    rc = rc ? rc : drv_kafka_set(conf, "message.max.bytes", max_bytes, why, sizeof why);
    if (rc != 0) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        if (conf) {
            rd_kafka_conf_destroy(conf);
        }
        return -1;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, s_delivered);
    rd_kafka_conf_set_error_cb(conf, s_error);
    rd_kafka_conf_set_opaque(conf, self);
    self->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why);
    if (!self->rk) {
        rd_kafka_conf_destroy(conf);
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    rd_kafka_set_log_queue(self->rk, NULL); // its log lines on the main queue, written by the loop
    if (drv_kafka_wake_init(&self->wake, rd_kafka_queue_get_main(self->rk), why, sizeof why) != 0) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    const char *topic = json_string_value(json_object_get(config, "topic"));
    for (int lane = 0; lane < KAFKA_SIGNALS; lane++) {
        char name[512];
        if (s_topic_name(topic, lane, name, sizeof name) != 0 ||
            !(self->topics[lane] = rd_kafka_topic_new(self->rk, name, NULL))) {
            snprintf(err, errlen, "node %s: topic %s: %s", node->id, name, rd_kafka_err2str(rd_kafka_last_error()));
            return -1;
        }
    }
    return 0;
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    kafka_out_t *self = calloc(1, sizeof *self);
    node->state = self;
    if (!self) {
        snprintf(err, errlen, "node %s: out of memory", node->id);
        return -1;
    }
    self->node = node;
    self->wake.fds[0] = self->wake.fds[1] = -1;
    const char *format = json_string_value(json_object_get(config, "format"));
    self->format = drv_kafka_format(format);
    self->max_message_bytes = (size_t)json_integer_value(json_object_get(config, "max_message_bytes"));
    const char *key = json_string_value(json_object_get(config, "key"));
    self->keyed = key && drv_node_path(node, key, &self->key) == 0;
    if (drv_node_probe) {
        return 0; // a probe connects to nothing
    }
    if (s_producer(self, node, config, err, errlen) != 0) {
        return -1;
    }
    drv_export_format_t exporting = {.lane_count = KAFKA_SIGNALS, .encode = s_encode, .arg = self, .sender = &s_sender};
    self->export = drv_export_new(node, config, &exporting, err, errlen);
    return self->export ? 0 : -1;
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    kafka_out_t *self = node->state;
    bool otlp = self->format == DRV_KAFKA_OTLP_PROTO || self->format == DRV_KAFKA_OTLP_JSON;
    for (size_t i = 0; i < n; i++) {
        char why[200];
        int lane = drv_otlp_signal_of(&records[i], why, sizeof why);
        if (lane >= 0 || !otlp) {
            drv_export_record(self->export, lane >= 0 ? lane : 0, &records[i]);
        } else {
            drv_node_export_error(node, 1, why);
            drv_node_count_gave_up(node, 1);
        }
    }
}

static void s_destroy(drv_node_t *node)
{
    kafka_out_t *self = node->state;
    if (!self) {
        return;
    }
    drv_export_destroy(&self->export); // every batch forgotten: what librdkafka holds is abandoned
    if (self->rk) {
        rd_kafka_purge(self->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_flush(self->rk, 1000); // the reports of what was purged, freeing their states
    }
    for (int lane = 0; lane < KAFKA_SIGNALS; lane++) {
        if (self->topics[lane]) {
            rd_kafka_topic_destroy(self->topics[lane]);
        }
    }
    drv_kafka_wake_fini(&self->wake);
    if (self->rk) {
        rd_kafka_destroy(self->rk);
    }
    while (self->states) {
        s_state_free(self, self->states);
    }
    free(self->scratch);
    free(self);
}

const drv_node_kind_t drv_exporter_kafka = {
    .schema = &drv_schema_exporter_kafka,
    .init = s_init,
    .run = s_run,
    DRV_EXPORT_NODE_HOOKS,
    .destroy = s_destroy,
};
