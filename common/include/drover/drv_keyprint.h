/*  drv_keyprint — a 64-bit fingerprint of a short byte string (a record's
    key) from its length and at most its first and last 8 bytes: a few
    loads and multiplies whatever the length. Equal bytes give equal
    prints; unequal bytes may too (keys alike at both ends), so a match is
    confirmed byte for byte. What the duplicate-key check (drv_batch.c) and
    processor:lua's key cache (worker/lua/drv_lua_record.c) compare first. */
#ifndef DRV_KEYPRINT_H
#define DRV_KEYPRINT_H

#include <stdint.h>
#include <string.h>

static inline uint64_t drv_keyprint(const char *bytes, uint32_t len)
{
    uint64_t head = 0, tail = 0;
    if (len >= 8) { // whole words, loaded as such (no store to forward)
        memcpy(&head, bytes, 8);
        memcpy(&tail, bytes + len - 8, 8);
    } else {
        for (uint32_t i = 0; i < len; i++) {
            head = head << 8 | (uint8_t)bytes[i];
        }
    }
    return (head ^ (tail * 0x9E3779B97F4A7C15ull) ^ len) * 0x9E3779B97F4A7C15ull;
}

#endif
