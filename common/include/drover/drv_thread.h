/*  drv_thread — a thread of droverd's or a worker's own that can be asked
    to stop: its lock (which also guards what its owner shares with it),
    a condition to wake it, and the stop flag. For the clients that wait on
    the network (the Kubernetes watches and reports). */
#ifndef DRV_THREAD_H
#define DRV_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct {
    pthread_t thread;
    bool started;
    pthread_mutex_t lock; // guards stop, and what the owner puts under it
    pthread_cond_t wake;
    bool stop;
} drv_thread_t;

//  Starts fn(arg) in a thread of its own: false when none could be made
//  (self is ready to stop all the same).
bool drv_thread_start(drv_thread_t *self, void *(*fn)(void *), void *arg);
//  Asks it to stop, wakes it, waits for it to end, frees what start made.
void drv_thread_stop(drv_thread_t *self);
//  With the lock held: waits until woken, ms pass (-1: until woken) or it
//  is asked to stop.
void drv_thread_wait(drv_thread_t *self, int64_t ms);
//  Whether it is asked to stop (takes the lock).
bool drv_thread_stopping(drv_thread_t *self);

#endif
