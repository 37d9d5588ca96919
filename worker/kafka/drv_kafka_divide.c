/*  drv_kafka_divide — see drv_kafka_divide.h. */
#include "drv_kafka_divide.h"
#include "drv_kafka_claims.h"
#include "drv_kafka_topics.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct drv_kafka_divide_t {
    drv_kafka_group_t *group;
    drv_kafka_topics_t *topics;
    drv_kafka_claims_t **claims; // by topic
    size_t count;
};

drv_kafka_divide_t *drv_kafka_divide_new(rd_kafka_t *rk, drv_kafka_group_t *group, const char *run_dir,
                                         const char *group_id, const json_t *topics, int wake_fd, char *err,
                                         size_t errlen)
{
    drv_kafka_divide_t *self = calloc(1, sizeof *self);
    if (self) {
        self->group = group;
        self->claims = calloc(json_array_size(topics) + 1, sizeof *self->claims);
    }
    if (!self || !self->claims) {
        free(self);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < json_array_size(topics); i++) {
        const char *topic = json_string_value(json_array_get(topics, i));
        if (!(self->claims[self->count] = drv_kafka_claims_new(run_dir, group_id, topic, err, errlen))) {
            drv_kafka_divide_destroy(&self);
            return NULL;
        }
        self->count++;
    }
    if (!(self->topics = drv_kafka_topics_new(rk, topics, wake_fd))) {
        snprintf(err, errlen, "partition counts: no thread to ask the cluster with");
        drv_kafka_divide_destroy(&self);
    }
    return self;
}

void drv_kafka_divide_destroy(drv_kafka_divide_t **self_p)
{
    drv_kafka_divide_t *self = *self_p;
    if (!self) {
        return;
    }
    drv_kafka_topics_destroy(&self->topics);
    for (size_t i = 0; i < self->count; i++) {
        drv_kafka_claims_destroy(&self->claims[i]);
    }
    free(self->claims);
    free(self);
    *self_p = NULL;
}

void drv_kafka_divide_leave(drv_kafka_divide_t *self)
{
    for (size_t i = 0; i < self->count; i++) {
        drv_kafka_claims_leave(self->claims[i]);
    }
}

bool drv_kafka_divide_known(drv_kafka_divide_t *self)
{
    for (size_t i = 0; self->topics && i < self->count; i++) {
        if (drv_kafka_topics_partitions(self->topics, i) < 0) {
            return false;
        }
    }
    return true;
}

//  One topic: its share of partitions of count, given back or taken.
static void s_step(drv_kafka_divide_t *self, size_t i, int32_t count)
{
    const char *topic = drv_kafka_topics_name(self->topics, i);
    drv_kafka_claims_t *claims = self->claims[i];
    int32_t reading = 0, last_read = -1;
    for (int32_t p = 0; p < count; p++) {
        bool read;
        if (!drv_kafka_group_owns(self->group, topic, p, &read) && drv_kafka_claims_held(claims, p)) {
            drv_kafka_claims_release(claims, p); // let go, its reading committed: the next reader starts there
        }
        reading += read;
        last_read = read ? p : last_read;
    }
    int32_t share = drv_kafka_claims_share(claims, count);
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(1);
    if (reading > share && !drv_kafka_group_giving_back(self->group)) {
        //  One at a time, the last first: another member takes it once
        //  what was read of it is committed.
        rd_kafka_topic_partition_list_add(list, topic, last_read);
        drv_kafka_group_revoke(self->group, list, false);
    } else if (reading < share) {
        int32_t start = (int32_t)(getpid() % count); // members start looking in different places
        for (int32_t k = 0; k < count && reading < share; k++) {
            int32_t p = (start + k) % count;
            if (!drv_kafka_claims_held(claims, p) && drv_kafka_claims_take(claims, p)) {
                rd_kafka_topic_partition_list_add(list, topic, p)->offset = RD_KAFKA_OFFSET_STORED;
                reading++;
            }
        }
        if (list->cnt > 0) {
            drv_kafka_group_assign(self->group, list);
        }
    }
    rd_kafka_topic_partition_list_destroy(list);
}

void drv_kafka_divide_close(drv_kafka_divide_t *self)
{
    drv_kafka_divide_leave(self);
    for (size_t i = 0; i < self->count; i++) {
        const char *topic = drv_kafka_topics_name(self->topics, i);
        rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(1);
        int32_t count = drv_kafka_topics_partitions(self->topics, i); // none is assigned before it is known
        for (int32_t p = 0; p < count; p++) {
            bool read;
            if (drv_kafka_group_owns(self->group, topic, p, &read)) {
                rd_kafka_topic_partition_list_add(list, topic, p);
            }
        }
        if (list->cnt > 0) {
            drv_kafka_group_revoke(self->group, list, false); // closing: let go at once
        }
        rd_kafka_topic_partition_list_destroy(list);
    }
    drv_kafka_divide_step(self); // every lock goes
}

void drv_kafka_divide_step(drv_kafka_divide_t *self)
{
    for (size_t i = 0; i < self->count; i++) {
        int32_t count = drv_kafka_topics_partitions(self->topics, i);
        if (count > 0) {
            s_step(self, i, count);
        }
    }
}
