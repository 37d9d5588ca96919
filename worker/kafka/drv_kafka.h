/*  drv_kafka — what receiver:kafka and exporter:kafka share of librdkafka
    (docs/operations.md, "Kafka"): a client's configuration from a node's
    normalized config (brokers, tls, sasl), and the client on the
    instance's loop. librdkafka works in threads of its own; what it has
    for the instance (delivery reports, messages, rebalances, errors, its
    log lines) waits on a queue, and the queue wakes a pipe the worker
    polls (rd_kafka_queue_io_event_enable), so nothing on the loop ever
    blocks on Kafka. */
#ifndef DRV_KAFKA_H
#define DRV_KAFKA_H

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>

//  A client's configuration: brokers, tls and sasl from config, its log
//  lines kept for the loop (drv_kafka_log). NULL with the reason in err (a
//  secret that cannot be read, a setting librdkafka refuses).
rd_kafka_conf_t *drv_kafka_conf(const json_t *config, char *err, size_t errlen);
//  Sets a configuration property; -1 with librdkafka's reason in err.
int drv_kafka_set(rd_kafka_conf_t *conf, const char *name, const char *value, char *err, size_t errlen);

typedef struct {
    int fds[2]; // the pipe: [0] polled, [1] written by librdkafka
    rd_kafka_queue_t *queue;
} drv_kafka_wake_t;

//  Makes queue (taken: freed by fini) write to a pipe whenever it goes
//  from empty to not. 0, or -1 with the reason in err.
int drv_kafka_wake_init(drv_kafka_wake_t *wake, rd_kafka_queue_t *queue, char *err, size_t errlen);
//  Empties the pipe: called before the queue is served, so that what
//  arrives while it is served wakes the loop again.
void drv_kafka_wake_clear(drv_kafka_wake_t *wake);
void drv_kafka_wake_fini(drv_kafka_wake_t *wake);

//  librdkafka's log lines, read from the client's main queue, into ours
//  (log_cb: it is called on the loop, never from librdkafka's threads).
void drv_kafka_log(const rd_kafka_t *rk, int level, const char *facility, const char *line);

#endif
