/*  drv_kafka_claims — receiver:kafka with `assignment: node`
    (docs/operations.md, "Kafka: who reads which partition"): the
    instances of one engine divide a topic's partitions among themselves,
    with no group coordinator, by locks under engine.run_dir:

        <run_dir>/kafka/<group_id>/<topic>/member.<pid>   one per instance reading
        <run_dir>/kafka/<group_id>/<topic>/<partition>.lock   its reader's

    A lock is flock(2)'d by the instance reading the partition (the kernel
    lets go of it when the instance dies); a member file is locked by an
    instance for as long as it wants a share (locked before it is renamed
    in, so that no member takes it for a dead one's), and a draining one
    lets go of it first. Each counts the members and reads at most its share
    (partitions / members, rounded up): one holding more gives the rest
    back once what it read of them is settled and committed, one holding
    less takes what is free. A partition changes hands only after its last
    reader committed: its next one reads from there, so nothing settled is
    read again and nothing waits for a rebalance. */
#ifndef DRV_KAFKA_CLAIMS_H
#define DRV_KAFKA_CLAIMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct drv_kafka_claims_t drv_kafka_claims_t;

//  One topic's claims for group under run_dir; this instance a member of
//  it. NULL with the reason in err (a directory that cannot be made).
drv_kafka_claims_t *drv_kafka_claims_new(const char *run_dir, const char *group, const char *topic, char *err,
                                         size_t errlen);
//  Lets go of every lock (what they guard must be committed by then).
void drv_kafka_claims_destroy(drv_kafka_claims_t **self_p);

//  No share wanted any more (draining): the member file is let go, and
//  the other members count one fewer.
void drv_kafka_claims_leave(drv_kafka_claims_t *self);
//  The partitions this instance may read now out of count: the members
//  still wanting a share are counted (dead ones' files removed).
int32_t drv_kafka_claims_share(drv_kafka_claims_t *self, int32_t count);

//  Takes partition's lock, if nobody holds it: true when it is ours.
bool drv_kafka_claims_take(drv_kafka_claims_t *self, int32_t partition);
//  True while we hold partition's lock.
bool drv_kafka_claims_held(const drv_kafka_claims_t *self, int32_t partition);
//  Lets go of partition's lock: its reading is committed.
void drv_kafka_claims_release(drv_kafka_claims_t *self, int32_t partition);

#endif
