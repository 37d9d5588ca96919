/*  drv_op_end — who wants to know when an operation (a rollout, a
    shutdown) ends: the admin layer keeps requests that wait for the
    outcome, and judges the answer itself; an operation only says that it
    ended, or that its record is being discarded before it did. Each
    listener is told once, then forgotten. */
#ifndef DRV_OP_END_H
#define DRV_OP_END_H

#include <stddef.h>

typedef enum {
    DRV_OP_ENDED = 0, // it finished (its status says how)
    DRV_OP_DISCARDED, // its record is being freed first (the history is full, droverd stops)
} drv_op_end_t;

typedef void(drv_op_end_fn)(void *arg, drv_op_end_t how);

typedef struct drv_op_listeners_t drv_op_listeners_t;

drv_op_listeners_t *drv_op_listeners_new(void);
//  Tells the listeners left DRV_OP_DISCARDED, then frees.
void drv_op_listeners_destroy(drv_op_listeners_t **self_p);
//  -1 out of memory.
int drv_op_listeners_add(drv_op_listeners_t *self, drv_op_end_fn *fn, void *arg);
//  Forgets the listener with this arg (it stopped waiting).
void drv_op_listeners_remove(drv_op_listeners_t *self, void *arg);
//  Tells every listener how, and forgets them.
void drv_op_listeners_fire(drv_op_listeners_t *self, drv_op_end_t how);
size_t drv_op_listeners_size(const drv_op_listeners_t *self);

#endif
