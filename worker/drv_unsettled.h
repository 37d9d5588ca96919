/*  drv_unsettled — the broker's batches an instance took and has not yet
    settled, oldest first: each is the input number the DAG gave it
    (drv_dag_input), and each is acknowledged, in order, once the DAG has
    settled up to it (docs/architecture.md, "Delivery guarantees"). An
    exporter's queue may hold thousands; they leave from the front, and the
    list is compacted only when it is full. */
#ifndef DRV_UNSETTLED_H
#define DRV_UNSETTLED_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t *inputs; // [head .. tail) are held
    size_t head, tail, size;
} drv_unsettled_t;

//  One more batch, taken as input.
void drv_unsettled_push(drv_unsettled_t *self, int64_t input);
//  The batches settled (their input at most settled) leave: how many.
size_t drv_unsettled_settle(drv_unsettled_t *self, int64_t settled);
//  How many are held.
size_t drv_unsettled_count(const drv_unsettled_t *self);
//  Forgets every one (their broker is gone); the memory stays for reuse.
void drv_unsettled_forget(drv_unsettled_t *self);
void drv_unsettled_free(drv_unsettled_t *self);

#endif
