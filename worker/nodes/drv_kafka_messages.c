/*  drv_kafka_messages — see drv_kafka_messages.h. */
#include "drv_kafka_messages.h"
#include "drv_http_body.h"
#include "drv_otlp.h"
#include "drv_otlp_json.h"
#include "drv_otlp_records.h"

#include "drover/drv_batch.h"
#include "drover/drv_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { FORMAT_OTLP_PROTO, FORMAT_OTLP_JSON, FORMAT_NDJSON, FORMAT_MSGPACK } format_t;

typedef struct {
    rd_kafka_message_t *message;
    json_t *json;            // ndjson: what its records point into
    drv_otlp_request_t otlp; // the OTLP formats: the same
    bool otlp_decoded;
} held_t;

struct drv_kafka_messages_t {
    format_t format;
    drv_otlp_signal_t signal;
    held_t held[DRV_KAFKA_MESSAGES_MAX];
    size_t count, bytes;
    msgpack_object *records; // every message's, one after the other
    size_t record_count, record_cap;
};

drv_kafka_messages_t *drv_kafka_messages_new(const char *format, const char *signal)
{
    drv_kafka_messages_t *self = calloc(1, sizeof *self);
    if (!self) {
        return NULL;
    }
    self->format = !strcmp(format, "otlp_json") ? FORMAT_OTLP_JSON
                   : !strcmp(format, "ndjson")  ? FORMAT_NDJSON
                   : !strcmp(format, "msgpack") ? FORMAT_MSGPACK
                                                : FORMAT_OTLP_PROTO;
    self->signal = !strcmp(signal, "traces")    ? DRV_OTLP_TRACES
                   : !strcmp(signal, "metrics") ? DRV_OTLP_METRICS
                                                : DRV_OTLP_LOGS;
    return self;
}

void drv_kafka_messages_destroy(drv_kafka_messages_t **self_p)
{
    drv_kafka_messages_t *self = *self_p;
    if (self) {
        drv_kafka_messages_clear(self);
        free(self->records);
        free(self);
        *self_p = NULL;
    }
}

bool drv_kafka_messages_hold(drv_kafka_messages_t *self, rd_kafka_message_t *message)
{
    if (self->count == DRV_KAFKA_MESSAGES_MAX) {
        return false;
    }
    self->held[self->count++] = (held_t){.message = message};
    self->bytes += message->len;
    return true;
}

size_t drv_kafka_messages_count(const drv_kafka_messages_t *self)
{
    return self->count;
}

const rd_kafka_message_t *drv_kafka_messages_at(const drv_kafka_messages_t *self, size_t i)
{
    return self->held[i].message;
}

bool drv_kafka_messages_full(const drv_kafka_messages_t *self)
{
    return self->count == DRV_KAFKA_MESSAGES_MAX || self->bytes >= DRV_KAFKA_MESSAGES_BYTES;
}

static bool s_append(drv_kafka_messages_t *self, const msgpack_object *records, size_t n)
{
    if (self->record_count + n > self->record_cap) {
        size_t cap = self->record_cap ? self->record_cap : 1024;
        while (cap < self->record_count + n) {
            cap *= 2;
        }
        msgpack_object *grown = realloc(self->records, cap * sizeof *grown);
        if (!grown) {
            return false;
        }
        self->records = grown;
        self->record_cap = cap;
    }
    memcpy(self->records + self->record_count, records, n * sizeof *records);
    self->record_count += n;
    return true;
}

//  One message's records into zone: n, -1 (not of the format: why says so)
//  or -2 (out of memory).
static int s_decode(drv_kafka_messages_t *self, held_t *held, msgpack_zone *zone, char *why, size_t whylen)
{
    const char *value = held->message->payload ? held->message->payload : "";
    size_t size = held->message->len;
    msgpack_object *records = NULL;
    char err[300];
    int n;
    if (self->format == FORMAT_NDJSON) {
        n = drv_http_body_records(value, size, true, zone, &held->json, &records, err, sizeof err);
    } else if (self->format == FORMAT_MSGPACK) {
        msgpack_object root;
        const msgpack_object *found;
        n = drv_batch_decode(value, size, zone, &root, &found, err, sizeof err);
        if (n > 0 && found == &root) {
            return s_append(self, &root, 1) ? 1 : -2; // a single map: root is on this stack
        }
        records = (msgpack_object *)found;
    } else {
        int rc = self->format == FORMAT_OTLP_JSON
                     ? drv_otlp_json_parse(self->signal, value, size, &held->otlp, err, sizeof err)
                     : drv_otlp_unpack(self->signal, value, size, &held->otlp, err, sizeof err);
        if (rc == DRV_OTLP_NO_MEMORY) {
            return -2;
        }
        held->otlp_decoded = rc == 0;
        held->otlp.observed_ns = (uint64_t)drv_time_wall_ns(); // read now: what does not say otherwise was observed now
        int64_t rejected = 0;
        n = rc != 0 ? -1 : drv_otlp_to_objects(&held->otlp, zone, &records, &rejected, err, sizeof err);
        if (n == DRV_OTLP_NO_MEMORY) {
            return -2;
        }
    }
    if (n < 0) {
        snprintf(why, whylen, "%s [%d] at offset %lld: %s", rd_kafka_topic_name(held->message->rkt),
                 held->message->partition, (long long)held->message->offset, err);
        return -1;
    }
    return s_append(self, records, (size_t)n) ? n : -2;
}

int drv_kafka_messages_records(drv_kafka_messages_t *self, msgpack_zone *zone, msgpack_object **records,
                               size_t *refused, char *why, size_t whylen)
{
    drv_kafka_messages_undecode(self);
    *refused = 0;
    for (size_t i = 0; i < self->count; i++) {
        char reason[400];
        int n = s_decode(self, &self->held[i], zone, reason, sizeof reason);
        if (n == -2) {
            return -1;
        }
        if (n == -1 && (*refused)++ == 0) {
            snprintf(why, whylen, "%s", reason);
        }
    }
    *records = self->records;
    return (int)self->record_count;
}

void drv_kafka_messages_undecode(drv_kafka_messages_t *self)
{
    for (size_t i = 0; i < self->count; i++) {
        held_t *held = &self->held[i];
        json_decref(held->json);
        held->json = NULL;
        if (held->otlp_decoded) {
            drv_otlp_request_free(&held->otlp);
            held->otlp_decoded = false;
        }
    }
    self->record_count = 0;
}

void drv_kafka_messages_clear(drv_kafka_messages_t *self)
{
    drv_kafka_messages_undecode(self);
    for (size_t i = 0; i < self->count; i++) {
        rd_kafka_message_destroy(self->held[i].message);
    }
    self->count = self->bytes = 0;
}
