/*  What the OTLP fuzz targets share: drv_pbcheck's estimate of what a
    decode allocates is checked against what protobuf-c really allocates. */
#ifndef FUZZ_PBCHECK_H
#define FUZZ_PBCHECK_H

#include "fuzz.h"

#include "drv_pbcheck.h"

#include <stdlib.h>

static void *fuzz_counted_alloc(void *data, size_t size)
{
    *(size_t *)data += size;
    return malloc(size);
}

static void fuzz_counted_free(void *data, void *ptr)
{
    (void)data;
    free(ptr);
}

//  wire decodes as desc (it was accepted), allocating no more than estimated.
static inline void fuzz_check_estimate(const ProtobufCMessageDescriptor *desc, const uint8_t *wire, size_t size)
{
    size_t used = 0;
    ProtobufCAllocator counting = {fuzz_counted_alloc, fuzz_counted_free, &used};
    ProtobufCMessage *message = protobuf_c_message_unpack(desc, &counting, size, wire);
    FUZZ_ASSERT(message != NULL);
    FUZZ_ASSERT(used <= drv_pbcheck_estimate(desc, wire, size) + 64);
    protobuf_c_message_free_unpacked(message, &counting);
}

#endif
