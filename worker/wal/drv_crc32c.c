/*  drv_crc32c — CRC32C (Castagnoli), table-driven: the checksum of every
    write-ahead log entry (drv_wal.h). No Debian C library provides it;
    zlib's crc32 is another polynomial. */
#include "drv_wal.h"

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

uint32_t drv_crc32c(uint32_t crc, const void *data, size_t len)
{
    if (!s_table[1]) {
        s_table_init();
    }
    const unsigned char *p = data;
    crc = ~crc;
    while (len--) {
        crc = s_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }
    return ~crc;
}
