/*  drv_kafka_body — what exporter:kafka makes of a batch (docs/operations.md,
    "Kafka"): its messages, encoded once by format and kept for retries.
    otlp_proto and otlp_json make one OTLP Export...Request of the batch
    (with a key, one per key, of the records that have it); ndjson one JSON object per
    record, msgpack one map. An OTLP request that would not fit in
    max_bytes (librdkafka's message.max.bytes, with its framing) is split
    in two until it does, or holds one record: such a record can never be
    written, and is given up (docs/operations.md, "Kafka"). A body holds
    its messages one after the other, each as a 32-bit count of the
    records it holds, a 32-bit key length (0xffffffff: no key), the key,
    a 32-bit value length and the value. */
#ifndef DRV_KAFKA_BODY_H
#define DRV_KAFKA_BODY_H

#include "drv_buf.h"
#include "drv_record_path.h"

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum { DRV_KAFKA_OTLP_PROTO, DRV_KAFKA_OTLP_JSON, DRV_KAFKA_NDJSON, DRV_KAFKA_MSGPACK } drv_kafka_format_t;

//  A format by its config name.
drv_kafka_format_t drv_kafka_format(const char *name);

#define DRV_KAFKA_MESSAGE_FRAMING 256 // what librdkafka adds to a message's key and value when it weighs one

//  Appends count records of lane (the OTLP signal) as messages to body;
//  key: the record path that keys each (NULL: none); max_bytes: of a
//  message with its framing. 0, or -1 out of memory.
int drv_kafka_body_write(drv_kafka_format_t format, const drv_record_path_t *key, int lane,
                         const msgpack_object *records, size_t count, size_t max_bytes, drv_buf_t *body);

//  A body's messages in order.
typedef struct {
    const char *at, *end;
} drv_kafka_reading_t;

typedef struct {
    size_t records;  // how many it holds
    const void *key; // NULL: none
    size_t key_len;
    const void *value;
    size_t value_len;
} drv_kafka_message_t;

//  The next message (pointing into the body), or false at its end.
bool drv_kafka_body_next(drv_kafka_reading_t *r, drv_kafka_message_t *message);

#endif
