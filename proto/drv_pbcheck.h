/*  drv_pbcheck — checks protobuf bytes against a message's descriptor before
    protobuf-c decodes them, without allocating: the protobuf side of the
    one decode policy for outside input (drv_mpcheck is msgpack's, the OTLP
    JSON parser keeps the same depth).

    protobuf-c's unpacker recurses once per nested message and has no limit:
    5,000 nested AnyValue -> ArrayValue fit in 20 KB and overflow the stack.
    It also allocates every message it meets, so bytes that are mostly empty
    submessages grow ~25-fold. Here the nesting is bounded, and what the
    decode would allocate is estimated and bounded, before any of it. */
#ifndef DRV_PBCHECK_H
#define DRV_PBCHECK_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

#define DRV_PBCHECK_MAX_DEPTH 32        // nested messages below the top one (OTLP/JSON's bound too)
#define DRV_PBCHECK_GROWTH 16           // decoded bytes per wire byte allowed...
#define DRV_PBCHECK_SLACK (1024 * 1024) // ...plus this

//  Returns 0 when data is well-formed wire format for desc, nested at most
//  DRV_PBCHECK_MAX_DEPTH deep, and would decode within
//  DRV_PBCHECK_GROWTH * size + DRV_PBCHECK_SLACK bytes; -1 with the reason
//  in err otherwise. Unknown fields are skipped (and counted), as protobuf-c does.
int drv_pbcheck(const ProtobufCMessageDescriptor *desc, const void *data, size_t size, char *err, size_t errlen);

//  What drv_pbcheck estimates the decode of data would allocate (0 when it is malformed); for tests.
size_t drv_pbcheck_estimate(const ProtobufCMessageDescriptor *desc, const void *data, size_t size);

#endif
