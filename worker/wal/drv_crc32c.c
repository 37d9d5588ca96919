/*  drv_crc32c — CRC32C (Castagnoli): the checksum of every write-ahead log
    entry (drv_wal.h). No Debian package provides it for C (zlib's crc32
    is another polynomial). On x86-64 with SSE4.2 (every x86-64 CPU since
    2008) the crc32 instruction does it, 8 bytes at a time; elsewhere a
    table, a byte at a time. */
#include "drv_wal.h"

#include <string.h>

static uint32_t s_table[256];

static void s_table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) {
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1; // Castagnoli, reflected
        }
        s_table[i] = c;
    }
}

static uint32_t s_by_table(uint32_t crc, const unsigned char *p, size_t len)
{
    if (!s_table[1]) {
        s_table_init();
    }
    while (len--) {
        crc = s_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }
    return crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

__attribute__((target("sse4.2"))) static uint32_t s_by_instruction(uint32_t crc, const unsigned char *p, size_t len)
{
    uint64_t c = crc;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = _mm_crc32_u64(c, word);
    }
    uint32_t c32 = (uint32_t)c;
    while (len--) {
        c32 = _mm_crc32_u8(c32, *p++);
    }
    return c32;
}
#endif

uint32_t drv_crc32c(uint32_t crc, const void *data, size_t len)
{
#if defined(__x86_64__)
    static int hardware = -1;
    if (hardware < 0) {
        __builtin_cpu_init();
        hardware = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    }
    if (hardware) {
        return ~s_by_instruction(~crc, data, len);
    }
#endif
    return ~s_by_table(~crc, data, len);
}
