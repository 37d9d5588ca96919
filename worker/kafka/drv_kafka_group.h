/*  drv_kafka_group — receiver:kafka's membership of its consumer group
    (docs/operations.md, "Kafka"): which partitions are its own, where its
    settled reading stands in each, and the commits. An input taken is
    remembered, for each partition it read, with the offset after its last
    message; when the pipeline settles the input, that offset is stored
    (enable.auto.offset.store is off) and committed, one commit at a time
    and at most every 100 ms, beside librdkafka's own every second.

    Rebalances are cooperative: a partition the group takes away is paused
    and let go (its unassign deferred) once what was read of it is settled
    and committed, or after REVOKE_WAIT_MS: its next owner starts where
    this one stopped, and reads again only what did not settle. A commit
    the group refuses while a rebalance is under way is tried again. */
#ifndef DRV_KAFKA_GROUP_H
#define DRV_KAFKA_GROUP_H

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct drv_kafka_group_t drv_kafka_group_t;

//  Sets conf's rebalance and commit callbacks (and its opaque) to the
//  group's. node names it in the log. manual: the consumer subscribes to
//  nothing, partitions are given and given back by the caller
//  (assignment: node, drv_kafka_claims.h). NULL when out of memory.
drv_kafka_group_t *drv_kafka_group_new(const char *node, rd_kafka_conf_t *conf, bool manual);
//  The consumer made from that conf.
void drv_kafka_group_attach(drv_kafka_group_t *self, rd_kafka_t *rk);
void drv_kafka_group_destroy(drv_kafka_group_t **self_p);

//  True when message's partition is ours to read (assigned, not revoked).
bool drv_kafka_group_reads(drv_kafka_group_t *self, const rd_kafka_message_t *message);
//  An input was taken: last is the last message it holds of a partition.
void drv_kafka_group_taken(drv_kafka_group_t *self, const rd_kafka_message_t *last, int64_t input);
//  Every input up to upto settled: their offsets stored, and committed.
void drv_kafka_group_settled(drv_kafka_group_t *self, int64_t upto);
//  True once the group gave it an assignment (an empty one too).
bool drv_kafka_group_ever_assigned(const drv_kafka_group_t *self);
//  Partition reads of inputs not settled yet.
size_t drv_kafka_group_unsettled(const drv_kafka_group_t *self);

//  True while the group refuses commits (a rebalance under way): the
//  receiver reads nothing more until a commit lands or the group assigns,
//  so a partition taken from under it is read again only as far as it had
//  read before the rebalance began.
bool drv_kafka_group_rebalancing(const drv_kafka_group_t *self);
//  Pauses (backpressure, a drain, a rebalance) or resumes every partition assigned.
void drv_kafka_group_pause(drv_kafka_group_t *self, bool pause);
bool drv_kafka_group_paused(const drv_kafka_group_t *self);

//  Starts a commit that is due, lets a revoked partition go whose wait
//  is over. due_ms: when next (mono ms, -1: nothing to do).
void drv_kafka_group_tick(drv_kafka_group_t *self, int64_t now);
int64_t drv_kafka_group_due_ms(const drv_kafka_group_t *self);
//  Commits what is stored now (a drain), and whether all of it is.
void drv_kafka_group_commit_now(drv_kafka_group_t *self);
bool drv_kafka_group_committed(const drv_kafka_group_t *self);

//  Partitions given (by the group, or by the caller with manual: their
//  offsets RD_KAFKA_OFFSET_STORED read from the committed one), and taken
//  away: nothing more is read of them, and they are let go once what was
//  read of them is settled and committed (at once when lost, closing, or
//  not cooperative). One revoke waits at a time: giving_back says one does
//  (a second lets the first go). owns: the partition is assigned (being
//  let go too); reading: and not being let go.
void drv_kafka_group_assign(drv_kafka_group_t *self, rd_kafka_topic_partition_list_t *list);
void drv_kafka_group_revoke(drv_kafka_group_t *self, const rd_kafka_topic_partition_list_t *list, bool lost);
bool drv_kafka_group_giving_back(const drv_kafka_group_t *self);
bool drv_kafka_group_owns(drv_kafka_group_t *self, const char *topic, int32_t partition, bool *reading);

//  The consumer leaves the group: a deferred unassign goes now, and what
//  is revoked from here on goes at once.
void drv_kafka_group_closing(drv_kafka_group_t *self);
void drv_kafka_group_let_go(drv_kafka_group_t *self);

//  {"partitions": {"TOPIC/N": {read_offset, committed_offset, lag, paused}}} of
//  the partitions it reads: lag is the log's end, as last fetched, less
//  the offset committed (null while not known). For the status and
//  drover_kafka_consumer_lag (docs/operations.md, "Kafka").
json_t *drv_kafka_group_details(drv_kafka_group_t *self);

#endif
