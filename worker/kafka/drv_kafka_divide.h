/*  drv_kafka_divide — receiver:kafka with `assignment: node`
    (docs/operations.md, "Kafka: who reads which partition"): the
    partitions of its topics divided among the engine's instances by
    their locks (drv_kafka_claims.h), their counts asked of the cluster
    (drv_kafka_topics.h), given to and taken back from the consumer
    through its group (drv_kafka_group.h, manual). */
#ifndef DRV_KAFKA_DIVIDE_H
#define DRV_KAFKA_DIVIDE_H

#include "drv_kafka_group.h"

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdbool.h>

typedef struct drv_kafka_divide_t drv_kafka_divide_t;

//  For consumer rk and its group: topics (a list of names) divided under
//  run_dir for group_id; wake_fd written when a topic's count changes.
//  NULL with the reason in err.
drv_kafka_divide_t *drv_kafka_divide_new(rd_kafka_t *rk, drv_kafka_group_t *group, const char *run_dir,
                                         const char *group_id, const json_t *topics, int wake_fd, char *err,
                                         size_t errlen);
//  Stops asking the cluster, lets go of every lock.
void drv_kafka_divide_destroy(drv_kafka_divide_t **self_p);

//  One step towards this instance's share: locks of partitions let go
//  are released, a partition more than the share is given back, free
//  ones taken up to it.
void drv_kafka_divide_step(drv_kafka_divide_t *self);
//  No share wanted any more (a drain): the others count one fewer.
void drv_kafka_divide_leave(drv_kafka_divide_t *self);
//  The consumer closes (its group closing, what it read committed): every
//  partition let go, then every lock.
void drv_kafka_divide_close(drv_kafka_divide_t *self);
//  True once the cluster said how many partitions every topic has.
bool drv_kafka_divide_known(drv_kafka_divide_t *self);

#endif
