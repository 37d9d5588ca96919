/*  drv_mpcheck — checks that bytes hold exactly one well-formed msgpack value
    before anything decodes them, without allocating. msgpack-c allocates a
    container's elements up front from its declared count, so five hostile bytes
    claiming a 4-billion-element array would ask for ~100 GiB; here every count
    is bounded by the bytes that are actually left. */
#ifndef DRV_MPCHECK_H
#define DRV_MPCHECK_H

#include <stddef.h>

#define DRV_MPCHECK_MAX_DEPTH 32 // msgpack-c's own unpacker nests no deeper
//  A record a receiver builds from JSON nests one level less: packed in a
//  batch (the broker, a disk buffer's log) it sits inside the batch's array.
#define DRV_RECORD_MAX_DEPTH (DRV_MPCHECK_MAX_DEPTH - 1)

//  Returns 0 when data is exactly one complete msgpack value whose containers
//  fit in the bytes present; -1 with the reason in err otherwise.
int drv_mpcheck(const void *data, size_t size, char *err, size_t errlen);

#endif
