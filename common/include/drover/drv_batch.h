/*  drv_batch — a producer message decoded: one msgpack map (a record) or an
    array of maps (a batch), checked by drv_mpcheck before msgpack-c sees it.
    A record with a duplicate key, at any depth, refuses the whole message.
    The worker decodes every message with it; the broker checks ack-mode
    messages with it before it may promise an acknowledgement. */
#ifndef DRV_BATCH_H
#define DRV_BATCH_H

#include <msgpack.h>
#include <stddef.h>

//  Decodes data into zone. Returns the number of records and points *records
//  at them (at *root itself for a single map, so root must outlive them), or
//  -1 with the reason in err.
int drv_batch_decode(const void *data, size_t size, msgpack_zone *zone, msgpack_object *root,
                     const msgpack_object **records, char *err, size_t errlen);

//  The same for bytes a receiver packed itself from what it parsed and
//  checked (receiver:otlp: its keys are unique at every depth): neither
//  walked by drv_mpcheck nor searched for duplicate keys again. Nesting
//  past msgpack-c's depth still fails (as malformed).
int drv_batch_decode_checked(const void *data, size_t size, msgpack_zone *zone, msgpack_object *root,
                             const msgpack_object **records, char *err, size_t errlen);

#endif
