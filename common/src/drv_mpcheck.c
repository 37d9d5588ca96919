/*  drv_mpcheck — a non-allocating walk over msgpack bytes.
    Every value consumes one of the values left at its level; a container
    saves that count on a small stack and makes its own element count
    (doubled for maps) the level's. The count in use stays in a register:
    every value touches it, and kept on the stack it cost a store and a
    reload per value. The formats are told apart by branches, not by a
    table: records repeat their shape, so the branches are predicted and
    the walk runs ahead of its loads (a table made every value wait for
    the one before). A count larger than the bytes left cannot be honest
    (each element takes at least one byte). */
#include "drover/drv_mpcheck.h"

#include <stdint.h>
#include <stdio.h>

static uint64_t s_be(const unsigned char *p, int bytes)
{
    uint64_t value = 0;
    for (int i = 0; i < bytes; i++) {
        value = (value << 8) | p[i];
    }
    return value;
}

int drv_mpcheck(const void *data, size_t size, char *err, size_t errlen)
{
    const unsigned char *p = data;
    size_t pos = 0;
    uint64_t saved[DRV_MPCHECK_MAX_DEPTH]; // the values left at each enclosing level
    int depth = 0;                         // containers open
    uint64_t left = 1;                     // values left at this level: the one top-level value
    for (;;) {
        if (left == 0) {
            if (depth == 0) {
                break;
            }
            left = saved[--depth];
            continue;
        }
        if (pos >= size) {
            snprintf(err, errlen, "truncated msgpack (%zu bytes)", size);
            return -1;
        }
        unsigned char b = p[pos++];
        uint64_t skip = 0;     // payload bytes after the header
        uint64_t children = 0; // values contained, for arrays and maps
        int len_bytes = 0;     // size of a length field that follows
        int kind = 0;          // 0 leaf, 1 array, 2 map, 3 str/bin, 4 ext
        if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
            skip = 0;
        } else if (b >= 0x80 && b <= 0x8f) {
            kind = 2;
            children = (uint64_t)(b & 0x0f) * 2;
        } else if (b >= 0x90 && b <= 0x9f) {
            kind = 1;
            children = b & 0x0f;
        } else if (b >= 0xa0 && b <= 0xbf) {
            skip = b & 0x1f;
        } else {
            switch (b) {
            case 0xc4:
            case 0xd9:
                len_bytes = 1;
                kind = 3;
                break;
            case 0xc5:
            case 0xda:
                len_bytes = 2;
                kind = 3;
                break;
            case 0xc6:
            case 0xdb:
                len_bytes = 4;
                kind = 3;
                break;
            case 0xc7:
                len_bytes = 1;
                kind = 4;
                break;
            case 0xc8:
                len_bytes = 2;
                kind = 4;
                break;
            case 0xc9:
                len_bytes = 4;
                kind = 4;
                break;
            case 0xca:
                skip = 4;
                break;
            case 0xcb:
                skip = 8;
                break;
            case 0xcc:
            case 0xd0:
                skip = 1;
                break;
            case 0xcd:
            case 0xd1:
                skip = 2;
                break;
            case 0xce:
            case 0xd2:
                skip = 4;
                break;
            case 0xcf:
            case 0xd3:
                skip = 8;
                break;
            case 0xd4:
                skip = 2;
                break;
            case 0xd5:
                skip = 3;
                break;
            case 0xd6:
                skip = 5;
                break;
            case 0xd7:
                skip = 9;
                break;
            case 0xd8:
                skip = 17;
                break;
            case 0xdc:
                len_bytes = 2;
                kind = 1;
                break;
            case 0xdd:
                len_bytes = 4;
                kind = 1;
                break;
            case 0xde:
                len_bytes = 2;
                kind = 2;
                break;
            case 0xdf:
                len_bytes = 4;
                kind = 2;
                break;
            default:
                snprintf(err, errlen, "malformed msgpack: byte 0x%02x at offset %zu", b, pos - 1);
                return -1;
            }
        }
        if (len_bytes) {
            if (size - pos < (size_t)len_bytes) {
                snprintf(err, errlen, "truncated msgpack (%zu bytes)", size);
                return -1;
            }
            uint64_t n = s_be(p + pos, len_bytes);
            pos += (size_t)len_bytes;
            if (kind == 1) {
                children = n;
            } else if (kind == 2) {
                children = n * 2;
            } else {
                skip = n + (kind == 4 ? 1 : 0);
            }
        }
        if (skip > size - pos) {
            snprintf(err, errlen, "truncated msgpack (%zu bytes)", size);
            return -1;
        }
        pos += (size_t)skip;
        left--;
        if (children > 0) {
            if (children > size - pos) {
                snprintf(err, errlen, "container at offset %zu claims %llu items in %zu bytes", pos,
                         (unsigned long long)children, size - pos);
                return -1;
            }
            if (depth >= DRV_MPCHECK_MAX_DEPTH) {
                snprintf(err, errlen, "nested deeper than %d levels", DRV_MPCHECK_MAX_DEPTH);
                return -1;
            }
            saved[depth++] = left;
            left = children;
        }
    }
    if (pos != size) {
        snprintf(err, errlen, "%zu trailing bytes after the message", size - pos);
        return -1;
    }
    return 0;
}
