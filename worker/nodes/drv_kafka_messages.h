/*  drv_kafka_messages — the messages of one receiver:kafka input and their
    records, by the node's format (docs/operations.md, "Kafka"): otlp_proto
    and otlp_json, an OTLP export request of the node's signal; ndjson, one
    JSON object per line; msgpack, a map or an array of maps. Messages are
    held until their input is taken, and decoded again if it was not (the
    pipeline pushed back): nothing consumed is lost. */
#ifndef DRV_KAFKA_MESSAGES_H
#define DRV_KAFKA_MESSAGES_H

#include <librdkafka/rdkafka.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>

#define DRV_KAFKA_MESSAGES_MAX 1024        // messages in one input
#define DRV_KAFKA_MESSAGES_BYTES (4 << 20) // and their bytes, at most about this

typedef struct drv_kafka_messages_t drv_kafka_messages_t;

//  format: otlp_proto, otlp_json, ndjson or msgpack; signal: logs, traces
//  or metrics (the OTLP formats). NULL when out of memory.
drv_kafka_messages_t *drv_kafka_messages_new(const char *format, const char *signal);
void drv_kafka_messages_destroy(drv_kafka_messages_t **self_p);

//  Holds a message (destroyed by clear). False when the input is full.
bool drv_kafka_messages_hold(drv_kafka_messages_t *self, rd_kafka_message_t *message);
size_t drv_kafka_messages_count(const drv_kafka_messages_t *self);
const rd_kafka_message_t *drv_kafka_messages_at(const drv_kafka_messages_t *self, size_t i);
//  True when no more should be held (count or bytes).
bool drv_kafka_messages_full(const drv_kafka_messages_t *self);

//  The records of every message held, as objects in zone (their strings
//  point into the messages and what decoding made: kept until undecode).
//  A message that is not of the format is left out, counted in *refused,
//  why naming the first. Returns the records, or -1 out of memory.
int drv_kafka_messages_records(drv_kafka_messages_t *self, msgpack_zone *zone, msgpack_object **records,
                               size_t *refused, char *why, size_t whylen);
//  Frees what decoding made; the messages stay held.
void drv_kafka_messages_undecode(drv_kafka_messages_t *self);
//  Lets every message go.
void drv_kafka_messages_clear(drv_kafka_messages_t *self);

#endif
