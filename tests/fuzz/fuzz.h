/*  The libFuzzer entry point every target defines. Built with clang's
    -fsanitize=fuzzer (make fuzz), or with replay.c into a program that feeds
    it the seed corpus and the regressions (make test). */
#ifndef DRV_FUZZ_H
#define DRV_FUZZ_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

//  A broken invariant is a crash the fuzzer reports, in every build.
#include <stdio.h>

#define FUZZ_ASSERT(cond)                                                                                              \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);                                                 \
            __builtin_trap();                                                                                          \
        }                                                                                                              \
    } while (0)

//  Records a receiver built as objects, checked to be maps and packed as one
//  batch (a msgpack array) into out, as if they had come over the wire.
static inline void fuzz_pack_records(const msgpack_object *records, int n, msgpack_sbuffer *out)
{
    msgpack_sbuffer_init(out);
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, (size_t)n);
    for (int i = 0; i < n; i++) {
        FUZZ_ASSERT(records[i].type == MSGPACK_OBJECT_MAP && msgpack_pack_object(&pk, records[i]) == 0);
    }
}

#endif
