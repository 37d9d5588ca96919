/*  The libFuzzer entry point every target defines. Built with clang's
    -fsanitize=fuzzer (make fuzz), or with replay.c into a program that feeds
    it the seed corpus and the regressions (make test). */
#ifndef DRV_FUZZ_H
#define DRV_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

//  A broken invariant is a crash the fuzzer reports, in every build.
#define FUZZ_ASSERT(cond)                                                                                    \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            __builtin_trap();                                                                                \
        }                                                                                                    \
    } while (0)

#endif
