/*  drv_kafka_topics — see drv_kafka_topics.h. */
#include "drv_kafka_topics.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TOPICS_EVERY_MS 5000 // partitions added to a topic are read after at most this
#define UNKNOWN_EVERY_MS 500 // a topic not heard of yet is asked about this often
#define REQUEST_MS 2000      // one metadata request's wait

typedef struct {
    char *name;
    rd_kafka_topic_t *rkt;
    int32_t partitions; // -1: not heard yet
} topic_t;

struct drv_kafka_topics_t {
    rd_kafka_t *rk;
    int wake_fd;
    topic_t *topics;
    size_t count;
    pthread_t thread;
    pthread_mutex_t lock; // partitions and stop
    pthread_cond_t stopped;
    bool stop;
};

//  Asks about every topic once: true when a count changed.
static bool s_ask(drv_kafka_topics_t *self, bool *unknown)
{
    bool changed = false;
    *unknown = false;
    for (size_t i = 0; i < self->count; i++) {
        const rd_kafka_metadata_t *md = NULL;
        int32_t partitions = -1;
        rd_kafka_resp_err_t err = rd_kafka_metadata(self->rk, 0, self->topics[i].rkt, &md, REQUEST_MS);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 && md->topics[0].err == 0) {
            partitions = md->topics[0].partition_cnt;
        }
        if (md) {
            rd_kafka_metadata_destroy(md);
        }
        pthread_mutex_lock(&self->lock);
        if (partitions >= 0 && partitions != self->topics[i].partitions) {
            self->topics[i].partitions = partitions;
            changed = true;
        }
        *unknown |= self->topics[i].partitions < 0;
        pthread_mutex_unlock(&self->lock);
    }
    return changed;
}

static void *s_run(void *arg)
{
    drv_kafka_topics_t *self = arg;
    pthread_mutex_lock(&self->lock);
    while (!self->stop) {
        pthread_mutex_unlock(&self->lock);
        bool unknown;
        if (s_ask(self, &unknown) && write(self->wake_fd, "t", 1) < 0) {
            //  A full pipe: the loop is woken already.
        }
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        long wait_ms = unknown ? UNKNOWN_EVERY_MS : TOPICS_EVERY_MS;
        until.tv_sec += wait_ms / 1000;
        until.tv_nsec += (wait_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&self->lock);
        while (!self->stop && pthread_cond_timedwait(&self->stopped, &self->lock, &until) == 0) {
        }
    }
    pthread_mutex_unlock(&self->lock);
    return NULL;
}

static void s_free(drv_kafka_topics_t *self)
{
    for (size_t i = 0; i < self->count; i++) {
        if (self->topics[i].rkt) {
            rd_kafka_topic_destroy(self->topics[i].rkt);
        }
        free(self->topics[i].name);
    }
    free(self->topics);
    pthread_cond_destroy(&self->stopped);
    pthread_mutex_destroy(&self->lock);
    free(self);
}

drv_kafka_topics_t *drv_kafka_topics_new(rd_kafka_t *rk, const json_t *names, int wake_fd)
{
    drv_kafka_topics_t *self = calloc(1, sizeof *self);
    if (!self) {
        return NULL;
    }
    self->rk = rk;
    self->wake_fd = wake_fd;
    pthread_mutex_init(&self->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&self->stopped, &attr);
    pthread_condattr_destroy(&attr);
    self->topics = calloc(json_array_size(names) + 1, sizeof *self->topics);
    bool ok = self->topics != NULL;
    for (size_t i = 0; ok && i < json_array_size(names); i++) {
        topic_t *topic = &self->topics[self->count++];
        topic->partitions = -1;
        topic->name = strdup(json_string_value(json_array_get(names, i)));
        topic->rkt = topic->name ? rd_kafka_topic_new(rk, topic->name, NULL) : NULL;
        ok = topic->rkt != NULL;
    }
    if (!ok || pthread_create(&self->thread, NULL, s_run, self) != 0) {
        s_free(self);
        return NULL;
    }
    return self;
}

void drv_kafka_topics_destroy(drv_kafka_topics_t **self_p)
{
    drv_kafka_topics_t *self = *self_p;
    if (!self) {
        return;
    }
    pthread_mutex_lock(&self->lock);
    self->stop = true;
    pthread_cond_signal(&self->stopped);
    pthread_mutex_unlock(&self->lock);
    pthread_join(self->thread, NULL);
    s_free(self);
    *self_p = NULL;
}

size_t drv_kafka_topics_count(const drv_kafka_topics_t *self)
{
    return self->count;
}

const char *drv_kafka_topics_name(const drv_kafka_topics_t *self, size_t i)
{
    return self->topics[i].name;
}

int32_t drv_kafka_topics_partitions(drv_kafka_topics_t *self, size_t i)
{
    pthread_mutex_lock(&self->lock);
    int32_t partitions = self->topics[i].partitions;
    pthread_mutex_unlock(&self->lock);
    return partitions;
}
