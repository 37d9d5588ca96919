/*  drv_timers — deadlines in a binary min-heap, as redis's ae.c and nginx's
    timer tree keep them: the owner embeds a drv_timer_t in whatever has a
    deadline, sets it when the deadline changes, and asks the heap for the
    earliest one, so a loop with N things to watch does O(log N) work per
    deadline change and none at all per wake-up.

    Timers may be lazy: a deadline that only moves later (a heartbeat
    pushing back its timeout) need not be moved; the timer fires early, the
    owner finds the real deadline still ahead and sets it again. */
#ifndef DRV_TIMERS_H
#define DRV_TIMERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t due; // mono ms, while armed
    size_t slot; // its place in the heap + 1; 0: not armed
} drv_timer_t;

typedef struct drv_timers_t drv_timers_t;

drv_timers_t *drv_timers_new(void);
void drv_timers_destroy(drv_timers_t **self_p);

//  Arms timer at due (moving it if it was armed). -1 when the heap cannot
//  grow (out of memory): the timer is then not armed.
int drv_timers_set(drv_timers_t *self, drv_timer_t *timer, int64_t due);
void drv_timers_cancel(drv_timers_t *self, drv_timer_t *timer);
bool drv_timers_armed(const drv_timer_t *timer);

//  The earliest due time, or -1 when nothing is armed.
int64_t drv_timers_next(const drv_timers_t *self);
//  A timer due at or before now, disarmed; NULL when none is due.
drv_timer_t *drv_timers_pop(drv_timers_t *self, int64_t now);
size_t drv_timers_count(const drv_timers_t *self);

#endif
