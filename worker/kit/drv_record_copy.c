/*  drv_record_copy — see the header. Sizes are msgpack's encodings: the
    smallest header that holds the length or value. */
#include "drv_record_copy.h"

#include <string.h>

static size_t s_len_header(uint32_t n, size_t tiny, size_t small_max)
{
    return n <= small_max ? tiny : n <= 0xff ? 2 : n <= 0xffff ? 3 : 5;
}

//  Arrays and maps have no 8-bit length: fix, 16 or 32 bits.
static size_t s_container_header(uint32_t n)
{
    return n <= 15 ? 1 : n <= 0xffff ? 3 : 5;
}

static size_t s_uint_size(uint64_t v)
{
    return v < 128 ? 1 : v <= 0xff ? 2 : v <= 0xffff ? 3 : v <= 0xffffffffULL ? 5 : 9;
}

static size_t s_int_size(int64_t v)
{
    return v >= -32 ? 1 : v >= INT8_MIN ? 2 : v >= INT16_MIN ? 3 : v >= INT32_MIN ? 5 : 9;
}

static size_t s_ext_header(uint32_t n)
{
    bool fixed = n == 1 || n == 2 || n == 4 || n == 8 || n == 16;
    return fixed ? 2 : n <= 0xff ? 3 : n <= 0xffff ? 4 : 6;
}

//  size bytes of data copied into zone; NULL out of memory (or when size is 0: nothing to copy).
static const char *s_bytes(msgpack_zone *zone, const char *data, uint32_t size, bool *failed)
{
    if (size == 0) {
        return data;
    }
    char *copy = msgpack_zone_malloc(zone, size);
    if (!copy) {
        *failed = true;
        return NULL;
    }
    memcpy(copy, data, size);
    return copy;
}

static size_t s_copy(msgpack_zone *zone, const msgpack_object *src, msgpack_object *dst, bool *failed)
{
    *dst = *src;
    switch (src->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        return s_uint_size(src->via.u64);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return s_int_size(src->via.i64);
    case MSGPACK_OBJECT_FLOAT32:
        return 5;
    case MSGPACK_OBJECT_FLOAT64:
        return 9;
    case MSGPACK_OBJECT_STR:
        dst->via.str.ptr = s_bytes(zone, src->via.str.ptr, src->via.str.size, failed);
        return s_len_header(src->via.str.size, 1, 31) + src->via.str.size;
    case MSGPACK_OBJECT_BIN:
        dst->via.bin.ptr = s_bytes(zone, src->via.bin.ptr, src->via.bin.size, failed);
        return s_len_header(src->via.bin.size, 2, 0xff) + src->via.bin.size;
    case MSGPACK_OBJECT_EXT:
        dst->via.ext.ptr = s_bytes(zone, src->via.ext.ptr, src->via.ext.size, failed);
        return s_ext_header(src->via.ext.size) + src->via.ext.size;
    case MSGPACK_OBJECT_ARRAY: {
        uint32_t n = src->via.array.size;
        size_t size = s_container_header(n);
        msgpack_object *items = n ? msgpack_zone_malloc(zone, n * sizeof *items) : NULL;
        if (n && !items) {
            *failed = true;
            return 0;
        }
        for (uint32_t i = 0; i < n; i++) {
            size += s_copy(zone, &src->via.array.ptr[i], &items[i], failed);
        }
        dst->via.array.ptr = items;
        return size;
    }
    case MSGPACK_OBJECT_MAP: {
        uint32_t n = src->via.map.size;
        size_t size = s_container_header(n);
        msgpack_object_kv *pairs = n ? msgpack_zone_malloc(zone, n * sizeof *pairs) : NULL;
        if (n && !pairs) {
            *failed = true;
            return 0;
        }
        for (uint32_t i = 0; i < n; i++) {
            size += s_copy(zone, &src->via.map.ptr[i].key, &pairs[i].key, failed);
            size += s_copy(zone, &src->via.map.ptr[i].val, &pairs[i].val, failed);
        }
        dst->via.map.ptr = pairs;
        return size;
    }
    default: // nil, boolean
        return 1;
    }
}

size_t drv_record_copy(msgpack_zone *zone, const msgpack_object *src, msgpack_object *dst)
{
    bool failed = false;
    size_t size = s_copy(zone, src, dst, &failed);
    return failed ? 0 : size;
}
