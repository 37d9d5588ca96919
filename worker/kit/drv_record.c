/*  drv_record — see drv_record.h. */
#include "drv_record.h"

#include <string.h>

bool drv_record_same_key(const msgpack_object *a, const msgpack_object *b)
{
    return a->type == MSGPACK_OBJECT_STR && b->type == MSGPACK_OBJECT_STR && a->via.str.size == b->via.str.size &&
           (a->via.str.size == 0 || memcmp(a->via.str.ptr, b->via.str.ptr, a->via.str.size) == 0);
}

int drv_record_find(const msgpack_object_kv *kv, size_t n, const msgpack_object *key)
{
    for (size_t i = 0; i < n; i++) {
        if (drv_record_same_key(&kv[i].key, key)) {
            return (int)i;
        }
    }
    return -1;
}

void drv_record_remove(msgpack_object_kv *kv, size_t *n, int index)
{
    memmove(&kv[index], &kv[index + 1], (*n - (size_t)index - 1) * sizeof *kv);
    (*n)--;
}
