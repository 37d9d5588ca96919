/*  drv_buffer_sync — when what the log took is durable (policies.buffer.sync):
    - always: fdatasync at the end of every loop turn that appended, on the
      loop, before any answer of that turn goes out;
    - batch: group commit on a thread of the instance's own: a sync starts
      as soon as something is appended and none is running, and covers
      everything appended before it started; answers wait for the sync that
      covers them, while the loop goes on taking input (covered by the next
      one): syncs run back to back while input comes, so none is spaced out
      to save IOPS, and an answer waits at most two syncs. sync_interval_ms
      is the bound a sync must keep: one that takes longer is logged (the
      disk is slower than the policy asks), at most every 10 s;
    - none: durable once written (the page cache has it: a killed process
      loses nothing, a power cut may).
    The thread only waits on the disk: it touches nothing but its job. */
#include "drv_buffer_internal.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct drv_buffer_syncer_t {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool quit;
    bool queued;        // job waits for the thread
    bool running;       // a job was handed over and has not been collected
    bool finished;      // the thread is done with it: rc, err
    int64_t started_ms; // mono, when the job was handed over (the loop's alone)
    drv_wal_sync_job_t job;
    int rc;
    char err[300];
    int done_fd; // eventfd: readable when a job finished
};

static void *s_thread(void *arg)
{
    drv_buffer_syncer_t *syncer = arg;
    pthread_mutex_lock(&syncer->lock);
    while (!syncer->quit) {
        if (!syncer->queued) {
            pthread_cond_wait(&syncer->cond, &syncer->lock);
            continue;
        }
        syncer->queued = false;
        drv_wal_sync_job_t job = syncer->job;
        pthread_mutex_unlock(&syncer->lock);
        char err[300] = "";
        int rc = drv_wal_sync_run(&job, err, sizeof err);
        pthread_mutex_lock(&syncer->lock);
        syncer->rc = rc;
        syncer->job.prepared = job.prepared;
        snprintf(syncer->err, sizeof syncer->err, "%s", err);
        syncer->finished = true;
        uint64_t one = 1;
        if (write(syncer->done_fd, &one, sizeof one) < 0) {
            //  Cannot happen short of a bug (the counter cannot overflow here): the loop polls anyway.
        }
        pthread_mutex_unlock(&syncer->lock);
        drv_wal_sync_release(&job); // after the answers were let go
        pthread_mutex_lock(&syncer->lock);
    }
    pthread_mutex_unlock(&syncer->lock);
    return NULL;
}

int drv_buffer_syncer_start(drv_buffer_t *self, char *err, size_t errlen)
{
    if (self->policy.sync != DRV_BUFFER_SYNC_BATCH) {
        return 0;
    }
    drv_buffer_syncer_t *syncer = calloc(1, sizeof *syncer);
    if (!syncer) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    syncer->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutex_init(&syncer->lock, NULL);
    pthread_cond_init(&syncer->cond, NULL);
    int rc = syncer->done_fd >= 0 ? pthread_create(&syncer->thread, NULL, s_thread, syncer) : errno;
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the log's sync thread: %s", strerror(rc));
        if (syncer->done_fd >= 0) {
            close(syncer->done_fd);
        }
        free(syncer);
        return -1;
    }
    self->syncer = syncer;
    drv_wal_defer_deletes(self->wal);
    return 0;
}

void drv_buffer_syncer_stop(drv_buffer_t *self)
{
    drv_buffer_syncer_t *syncer = self->syncer;
    if (!syncer) {
        return;
    }
    pthread_mutex_lock(&syncer->lock);
    syncer->quit = true;
    pthread_cond_signal(&syncer->cond);
    pthread_mutex_unlock(&syncer->lock);
    pthread_join(syncer->thread, NULL);
    if (syncer->queued) { // never taken: its duplicates are closed here
        drv_wal_sync_run(&syncer->job, syncer->err, sizeof syncer->err);
        drv_wal_sync_release(&syncer->job);
    }
    close(syncer->done_fd);
    pthread_mutex_destroy(&syncer->lock);
    pthread_cond_destroy(&syncer->cond);
    free(syncer);
    self->syncer = NULL;
}

//  A finished job: what it covered is durable (or, failed, to be synced again).
//  A sync that took longer than sync_interval_ms: said, at most every 10 s.
static void s_took(drv_buffer_t *self, int64_t took_ms)
{
    int64_t now = drv_time_mono_ms();
    if (took_ms > self->policy.sync_interval_ms && now - self->slow_warned_ms >= 10000) {
        self->slow_warned_ms = now;
        drv_warn("disk buffer sync took %lld ms, longer than sync_interval_ms %lld: answers wait for the disk dir=%s",
                 (long long)took_ms, (long long)self->policy.sync_interval_ms, self->dir);
    }
}

static void s_collect(drv_buffer_t *self)
{
    drv_buffer_syncer_t *syncer = self->syncer;
    uint64_t count;
    if (read(syncer->done_fd, &count, sizeof count) < 0 && errno != EAGAIN) {
        return;
    }
    pthread_mutex_lock(&syncer->lock);
    bool finished = syncer->finished;
    int rc = syncer->rc;
    drv_wal_sync_job_t job = syncer->job;
    int64_t last = job.last;
    char err[300];
    snprintf(err, sizeof err, "%s", syncer->err);
    syncer->finished = false;
    pthread_mutex_unlock(&syncer->lock);
    if (!finished) {
        return;
    }
    syncer->running = false;
    drv_wal_sync_finished(self->wal, &job, rc == 0);
    if (rc != 0) {
        drv_warn("disk buffer sync failed dir=%s reason=\"%s\"", self->dir, err);
        self->dirty_since_ms = self->dirty_since_ms < 0 ? 0 : self->dirty_since_ms;
        return;
    }
    self->durable = last > self->durable ? last : self->durable;
    s_took(self, drv_time_mono_ms() - syncer->started_ms);
}

static void s_hand_over(drv_buffer_t *self)
{
    drv_buffer_syncer_t *syncer = self->syncer;
    drv_wal_sync_job_t job;
    drv_wal_sync_start(self->wal, &job);
    self->dirty_since_ms = -1;
    if (drv_wal_sync_empty(&job)) {
        self->durable = job.last > self->durable ? job.last : self->durable; // nothing left to wait for
        return;
    }
    pthread_mutex_lock(&syncer->lock);
    syncer->job = job;
    syncer->queued = true;
    syncer->running = true;
    syncer->started_ms = drv_time_mono_ms();
    pthread_cond_signal(&syncer->cond);
    pthread_mutex_unlock(&syncer->lock);
}

int drv_buffer_sync_if_due(drv_buffer_t *self, int64_t now_ms, char *err, size_t errlen)
{
    drv_buffer_adopt_tick(self, now_ms);
    drv_wal_tick(self->wal, now_ms);
    if (self->syncer) {
        s_collect(self);
        if ((self->dirty_since_ms >= 0 || drv_wal_chores(self->wal)) && !self->syncer->running) {
            s_hand_over(self);
        }
        return 0;
    }
    if (self->dirty_since_ms < 0) {
        return 0;
    }
    int64_t last = drv_wal_last(self->wal);
    int64_t started = drv_time_mono_ms();
    if (drv_wal_sync(self->wal, err, errlen) != 0) {
        return -1;
    }
    s_took(self, drv_time_mono_ms() - started);
    self->durable = last;
    self->dirty_since_ms = -1;
    return 0;
}

int64_t drv_buffer_durable(const drv_buffer_t *self)
{
    return self->durable;
}

int drv_buffer_fd(const drv_buffer_t *self)
{
    return self->syncer ? self->syncer->done_fd : -1;
}

int64_t drv_buffer_timeout_ms(const drv_buffer_t *self, int64_t now_ms)
{
    if (self->adopted) {
        return 0; // copying a log taken over, a slice per turn
    }
    int64_t scan = self->next_scan_ms - now_ms > 0 ? self->next_scan_ms - now_ms : 0;
    bool waiting = self->dirty_since_ms >= 0 && !(self->syncer && self->syncer->running);
    return waiting ? 0 : scan; // a running sync wakes the loop through drv_buffer_fd
}
