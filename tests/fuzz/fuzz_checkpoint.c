/*  A file checkpoint read back (worker/tail/drv_checkpoint.c): it lives on
    disk where anyone with the buffer directory can write it. Whatever the
    bytes: no crash; what is accepted has every field in range (a
    fingerprint of at most 1024 bytes, an offset not negative, a path that
    fits, an origin too); and what is accepted is written again to the same checkpoint,
    a path of any bytes included. */
#include "fuzz.h"

#include "drv_checkpoint.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    drv_checkpoint_t read, again;
    char why[300] = "";
    if (!drv_checkpoint_parse((const char *)data, size, &read, why, sizeof why)) {
        FUZZ_ASSERT(why[0] != 0);
        return 0;
    }
    FUZZ_ASSERT(read.fingerprint_bytes <= DRV_CHECKPOINT_FINGERPRINT_MAX && read.offset >= 0);
    FUZZ_ASSERT(memchr(read.path, 0, sizeof read.path) != NULL);
    FUZZ_ASSERT(memchr(read.origin, 0, sizeof read.origin) != NULL);
    char *text = drv_checkpoint_text(&read);
    FUZZ_ASSERT(text && drv_checkpoint_parse(text, strlen(text), &again, why, sizeof why));
    FUZZ_ASSERT(again.dev == read.dev && again.ino == read.ino && again.offset == read.offset &&
                again.fingerprint == read.fingerprint && again.fingerprint_bytes == read.fingerprint_bytes &&
                !strcmp(again.path, read.path) && !strcmp(again.origin, read.origin));
    free(text);
    return 0;
}
