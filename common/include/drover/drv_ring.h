/*  drv_ring — the data ring from the broker to one instance: a
    single-producer, single-consumer byte ring in a memory file the instance
    creates and the broker maps, so that a batch crosses from one process to
    the other as one copy, with no socket, no I/O thread and no wake-up while
    the instance is busy. The zmq data socket stays for everything else, and
    rings the doorbell when the instance sleeps. docs/architecture.md ("The
    data ring") says how the two paths keep one order; schemas/control.md
    the fields that offer a ring.

    An entry is two parts, a header and a payload, kept whole and in order.
    Positions count bytes from the ring's start and only grow; the producer
    owns `head`, the consumer `tail`. Before it waits, the consumer says so
    (drv_ring_sleep); a producer that publishes an entry then finds it
    asleep clears the flag and rings the doorbell (both sides fence, so one
    of them always sees the other). */
#ifndef DRV_RING_H
#define DRV_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DRV_RING_BYTES (4u << 20) // the instance's ring: ~700 of B1's batches

typedef struct drv_ring_t drv_ring_t;

//  The consumer's side: a new ring of `bytes` data bytes (a power of two)
//  in a memory file; its descriptor (drv_ring_fd) is what the producer
//  maps. NULL with the reason in err.
drv_ring_t *drv_ring_create(size_t bytes, char *err, size_t errlen);
//  The producer's side: the ring process `pid` holds as descriptor `fd`,
//  opened through /proc (the same user's process), sealed against a change
//  of size and with its positions in bounds. NULL with the reason in err
//  (then the batches go over the socket).
drv_ring_t *drv_ring_attach(pid_t pid, int fd, char *err, size_t errlen);
void drv_ring_destroy(drv_ring_t **self_p);
int drv_ring_fd(const drv_ring_t *self);
size_t drv_ring_bytes(const drv_ring_t *self);
//  The data's first byte in this process: every entry lies in
//  [data, data + bytes) (what the fuzz target checks).
const void *drv_ring_data(const drv_ring_t *self);

//  Producer. Appends header and payload as one entry. 1: published (*wake:
//  the consumer sleeps, ring its doorbell); 0: no room now; -1: it would
//  never fit (it goes over the socket); -2: the consumer's tail is out of
//  bounds: the ring is not one any more (stop using it).
int drv_ring_put(drv_ring_t *self, const void *header, size_t header_len, const void *payload, size_t payload_len,
                 bool *wake);
//  True when every entry published was taken.
bool drv_ring_empty(const drv_ring_t *self);

//  Consumer. The oldest entry, in place (valid until drv_ring_release):
//  1, 0 when there is none, -1 when the ring is not what a producer writes
//  (its positions or an entry's lengths out of bounds).
int drv_ring_peek(drv_ring_t *self, const void **header, size_t *header_len, const void **payload, size_t *payload_len);
//  Drops the entry drv_ring_peek gave.
void drv_ring_release(drv_ring_t *self);
//  Before waiting: false when entries came meanwhile (do not wait), else
//  the producer will ring the doorbell for the next one.
bool drv_ring_sleep(drv_ring_t *self);
//  Awake again: the producer need not ring.
void drv_ring_awake(drv_ring_t *self);

//  Batches that crossed over the socket while the ring was in use (too
//  large for it): the consumer counts each it takes, the producer reads
//  the count to know they were taken before it writes to the ring again.
void drv_ring_count_socket_batch(drv_ring_t *self);
uint64_t drv_ring_socket_batches(const drv_ring_t *self);

#endif
