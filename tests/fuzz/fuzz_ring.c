/*  The data ring as an instance reads it (drv_ring_peek/release), whatever
    a broker wrote there: the input is the ring's two positions (its first
    16 bytes) and then its data. Every entry given lies inside the ring,
    the walk ends (an entry or a pad always moves the tail on, and the
    positions are bounded), and a ring out of bounds is said to be so,
    never read past. The layout (positions at bytes 64 and 128 of the first
    page, the data from byte 4096) is drv_ring.c's. */
#include "fuzz.h"

#include "drover/drv_ring.h"

#include <string.h>
#include <unistd.h>

#define BYTES 4096
#define PAGE 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 16) {
        return 0;
    }
    char err[200];
    drv_ring_t *ring = drv_ring_create(BYTES, err, sizeof err);
    FUZZ_ASSERT(ring);
    int fd = drv_ring_fd(ring);
    uint64_t head, tail;
    memcpy(&head, data, 8);
    memcpy(&tail, data + 8, 8);
    head %= 1u << 20; // positions anywhere in the first MiB: wraps, gaps, a tail past the head
    tail %= 1u << 20;
    FUZZ_ASSERT(pwrite(fd, &head, 8, 64) == 8 && pwrite(fd, &tail, 8, 128) == 8);
    size_t len = size - 16 < BYTES ? size - 16 : BYTES;
    FUZZ_ASSERT(pwrite(fd, data + 16, len, PAGE) == (ssize_t)len);
    const unsigned char *start = drv_ring_data(ring), *end = start + BYTES;
    for (int steps = 0; steps < 2 * BYTES; steps++) { // each entry is at least 8 bytes of at most BYTES
        const void *header, *payload;
        size_t header_len, payload_len;
        int rc = drv_ring_peek(ring, &header, &header_len, &payload, &payload_len);
        if (rc <= 0) {
            break;
        }
        const unsigned char *h = header, *p = payload;
        FUZZ_ASSERT(h >= start && h + header_len <= end && p == h + header_len && p + payload_len <= end);
        drv_ring_release(ring);
        FUZZ_ASSERT(steps + 1 < 2 * BYTES); // it ends
    }
    drv_ring_destroy(&ring);
    return 0;
}
