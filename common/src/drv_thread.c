/*  drv_thread — see drover/drv_thread.h. */
#include "drover/drv_thread.h"

#include <time.h>

bool drv_thread_start(drv_thread_t *self, void *(*fn)(void *), void *arg)
{
    pthread_mutex_init(&self->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); // a clock set back does not stretch a wait
    pthread_cond_init(&self->wake, &attr);
    pthread_condattr_destroy(&attr);
    self->stop = false;
    self->started = pthread_create(&self->thread, NULL, fn, arg) == 0;
    return self->started;
}

void drv_thread_stop(drv_thread_t *self)
{
    pthread_mutex_lock(&self->lock);
    self->stop = true;
    pthread_cond_broadcast(&self->wake);
    pthread_mutex_unlock(&self->lock);
    if (self->started) {
        pthread_join(self->thread, NULL);
        self->started = false;
    }
    pthread_mutex_destroy(&self->lock);
    pthread_cond_destroy(&self->wake);
}

void drv_thread_wait(drv_thread_t *self, int64_t ms)
{
    if (self->stop) {
        return;
    }
    if (ms < 0) {
        pthread_cond_wait(&self->wake, &self->lock);
        return;
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000;
    until.tv_sec += until.tv_nsec / 1000000000;
    until.tv_nsec %= 1000000000;
    pthread_cond_timedwait(&self->wake, &self->lock, &until);
}

bool drv_thread_stopping(drv_thread_t *self)
{
    pthread_mutex_lock(&self->lock);
    bool stop = self->stop;
    pthread_mutex_unlock(&self->lock);
    return stop;
}
