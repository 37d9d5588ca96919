/*  drv_feed — the instance's side of the broker: batches in, credit and
    acknowledgements out. Batches come through the data ring the instance
    offers the broker (drover/drv_ring.h), or over the data socket when the
    broker cannot map it or a batch is too large for it; either way they
    are taken in the order the broker sent them (docs/architecture.md, "The
    data ring"). The credit protocol is schemas/control.md's. */
#ifndef DRV_FEED_H
#define DRV_FEED_H

#include "drv_dag.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct drv_feed_t drv_feed_t;

//  Connects to the broker's backend; with a data ring unless `ring` is
//  false. NULL with the reason in err.
drv_feed_t *drv_feed_new(const char *instance, const char *endpoint, int64_t credit_window, bool ring, char *err,
                         size_t errlen);
void drv_feed_destroy(drv_feed_t **self_p);

//  The first credit: the whole window, and the ring if there is one.
void drv_feed_start(drv_feed_t *self);
//  The data socket, for zmq_poll.
void *drv_feed_socket(drv_feed_t *self);
//  Before the loop waits: false when the ring holds entries (do not wait).
bool drv_feed_sleep(drv_feed_t *self);
//  After it waited.
void drv_feed_awake(drv_feed_t *self);

//  Takes what the broker sent into dag (at most a round's worth, plus what
//  the ring held before a socket message), then settles. *marker: the
//  broker's DRAIN marker came. 0, or -1 when the ring is broken (the
//  instance must stop: what it did not acknowledge is redelivered).
int drv_feed_take(drv_feed_t *self, drv_dag_t *dag, bool *marker);
//  Acknowledges what dag settled, with the credit of the batches taken.
void drv_feed_settle(drv_feed_t *self, drv_dag_t *dag);
//  The last word on the data pipe, behind the last acknowledgement.
void drv_feed_drained(drv_feed_t *self, drv_dag_t *dag);
//  Batches taken from the broker.
int64_t drv_feed_batches(const drv_feed_t *self);

#endif
