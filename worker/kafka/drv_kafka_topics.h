/*  drv_kafka_topics — how many partitions each topic has, for
    receiver:kafka with `assignment: node` (drv_kafka_claims.h): asked of
    the cluster in a thread of its own (rd_kafka_metadata blocks), every
    TOPICS_EVERY_MS and sooner while a topic is unknown, so that the
    instance's loop never waits for a broker. */
#ifndef DRV_KAFKA_TOPICS_H
#define DRV_KAFKA_TOPICS_H

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

typedef struct drv_kafka_topics_t drv_kafka_topics_t;

//  Starts asking rk's cluster about names (a list of topic names); one
//  byte is written to wake_fd whenever a count changes. NULL when out of
//  memory or without a thread.
drv_kafka_topics_t *drv_kafka_topics_new(rd_kafka_t *rk, const json_t *names, int wake_fd);
//  Stops the thread (waiting for the request under way) and frees.
void drv_kafka_topics_destroy(drv_kafka_topics_t **self_p);

size_t drv_kafka_topics_count(const drv_kafka_topics_t *self);
const char *drv_kafka_topics_name(const drv_kafka_topics_t *self, size_t i);
//  Topic i's partitions as last heard; -1 before the cluster answered.
int32_t drv_kafka_topics_partitions(drv_kafka_topics_t *self, size_t i);

#endif
