/*  drv_batch — see drv_batch.h. */
#include "drover/drv_batch.h"
#include "drover/drv_keyprint.h"
#include "drover/drv_mpcheck.h"

#include <stdbool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAIRWISE_MAX 16  // up to this many keys, compare every pair
#define HASHED_MAX 1024  // up to this many, a table of prints; past it, sort
#define PROBES_PER_KEY 4 // a table whose probes run longer gives way to sorting

static bool s_key_equal(const msgpack_object *a, const msgpack_object *b)
{
    if (a->type == MSGPACK_OBJECT_STR && b->type == MSGPACK_OBJECT_STR) {
        return a->via.str.size == b->via.str.size &&
               (a->via.str.size == 0 || memcmp(a->via.str.ptr, b->via.str.ptr, a->via.str.size) == 0);
    }
    return msgpack_object_equal(*a, *b);
}

//  Orders string keys by length then bytes; other keys after them, as equal
//  (they are then compared pairwise by s_key_equal's slower path).
static int s_key_order(const void *pa, const void *pb)
{
    const msgpack_object *a = *(const msgpack_object *const *)pa, *b = *(const msgpack_object *const *)pb;
    bool sa = a->type == MSGPACK_OBJECT_STR, sb = b->type == MSGPACK_OBJECT_STR;
    if (!sa || !sb) {
        return sa ? -1 : sb ? 1 : 0;
    }
    if (a->via.str.size != b->via.str.size) {
        return a->via.str.size < b->via.str.size ? -1 : 1;
    }
    return a->via.str.size ? memcmp(a->via.str.ptr, b->via.str.ptr, a->via.str.size) : 0;
}

//  A string key's print (drv_keyprint); one print for every other key, which
//  s_key_equal then tells apart.
static uint64_t s_key_print(const msgpack_object *key)
{
    return key->type == MSGPACK_OBJECT_STR ? drv_keyprint(key->via.str.ptr, key->via.str.size) : UINT64_MAX;
}

//  A larger map's keys through a table of their prints (twice as many
//  slots as keys, on the stack): found in one pass, the bytes compared
//  only where two prints are equal. Many keys alike in their prints (a
//  hostile map) would make the probes long: past PROBES_PER_KEY a key on
//  average it gives up (false) and the caller sorts instead. True when it
//  decided: *dup is the key seen twice, or NULL.
static bool s_duplicate_hashed(const msgpack_object_map *map, const msgpack_object **dup)
{
    uint32_t n = map->size, size = 32;
    while (size < 2 * n) {
        size *= 2;
    }
    uint32_t slot[2 * HASHED_MAX]; // 1 + the key's index; 0: empty
    uint64_t print[HASHED_MAX];
    memset(slot, 0, size * sizeof *slot);
    uint64_t probes = 0;
    for (uint32_t i = 0; i < n; i++) {
        print[i] = s_key_print(&map->ptr[i].key);
        uint32_t at = (uint32_t)(print[i] ^ (print[i] >> 29) ^ (print[i] >> 47)) & (size - 1);
        for (; slot[at]; at = (at + 1) & (size - 1)) {
            uint32_t j = slot[at] - 1;
            if (print[i] == print[j] && s_key_equal(&map->ptr[i].key, &map->ptr[j].key)) {
                *dup = &map->ptr[i].key;
                return true;
            }
            if (++probes > (uint64_t)PROBES_PER_KEY * n) {
                return false;
            }
        }
        slot[at] = i + 1;
    }
    *dup = NULL;
    return true;
}

//  The first key that appears twice in map, or NULL. A small map compares
//  every pair of prints, and the bytes only where two prints are equal;
//  a larger one hashes its prints, and sorts its keys when that would not
//  end quickly.
static const msgpack_object *s_duplicate_key(const msgpack_object_map *map, msgpack_zone *zone)
{
    uint32_t n = map->size;
    if (n <= PAIRWISE_MAX) {
        uint64_t print[PAIRWISE_MAX];
        for (uint32_t i = 0; i < n; i++) {
            print[i] = s_key_print(&map->ptr[i].key);
            for (uint32_t j = 0; j < i; j++) {
                if (print[i] == print[j] && s_key_equal(&map->ptr[i].key, &map->ptr[j].key)) {
                    return &map->ptr[i].key;
                }
            }
        }
        return NULL;
    }
    if (n <= HASHED_MAX) {
        const msgpack_object *dup = NULL;
        if (s_duplicate_hashed(map, &dup)) {
            return dup;
        }
    }
    const msgpack_object **keys = msgpack_zone_malloc(zone, n * sizeof *keys);
    if (!keys) {
        return &map->ptr[0].key; // cannot check: refuse rather than pass it unchecked
    }
    uint32_t other = 0; // non-string keys, sorted last
    for (uint32_t i = 0; i < n; i++) {
        keys[i] = &map->ptr[i].key;
        other += map->ptr[i].key.type != MSGPACK_OBJECT_STR;
    }
    qsort(keys, n, sizeof *keys, s_key_order);
    for (uint32_t i = 1; i < n - other; i++) {
        if (s_key_equal(keys[i], keys[i - 1])) {
            return keys[i];
        }
    }
    for (uint32_t i = n - other; i < n; i++) {
        for (uint32_t j = n - other; j < i; j++) {
            if (s_key_equal(keys[i], keys[j])) {
                return keys[i];
            }
        }
    }
    return NULL;
}

//  A duplicate key anywhere in value (maps inside maps and arrays too):
//  readers disagree on which of two values counts, so processors and
//  exporters must never see one (docs/security.md).
static const msgpack_object *s_find_duplicate(const msgpack_object *value, msgpack_zone *zone)
{
    if (value->type == MSGPACK_OBJECT_MAP) {
        const msgpack_object *dup = s_duplicate_key(&value->via.map, zone);
        for (uint32_t i = 0; !dup && i < value->via.map.size; i++) {
            const msgpack_object *v = &value->via.map.ptr[i].val;
            if (v->type == MSGPACK_OBJECT_MAP || v->type == MSGPACK_OBJECT_ARRAY) {
                dup = s_find_duplicate(v, zone);
            }
        }
        return dup;
    }
    if (value->type == MSGPACK_OBJECT_ARRAY) {
        for (uint32_t i = 0; i < value->via.array.size; i++) {
            const msgpack_object *v = &value->via.array.ptr[i];
            if (v->type == MSGPACK_OBJECT_MAP || v->type == MSGPACK_OBJECT_ARRAY) {
                const msgpack_object *dup = s_find_duplicate(v, zone);
                if (dup) {
                    return dup;
                }
            }
        }
    }
    return NULL;
}

static int s_refuse_duplicate(const msgpack_object *key, uint32_t index, bool batch, char *err, size_t errlen)
{
    char record[40] = "record";
    if (batch) {
        snprintf(record, sizeof record, "batch item %u", index);
    }
    if (key->type == MSGPACK_OBJECT_STR) {
        snprintf(err, errlen, "%s has a duplicate key \"%.*s\"", record,
                 (int)(key->via.str.size > 64 ? 64 : key->via.str.size), key->via.str.size ? key->via.str.ptr : "");
    } else {
        snprintf(err, errlen, "%s has a duplicate key", record);
    }
    return -1;
}

static int s_decode(const void *data, size_t size, msgpack_zone *zone, msgpack_object *root,
                    const msgpack_object **records, bool checked, char *err, size_t errlen)
{
    //  Checked first: a hostile count must not become a huge allocation.
    if (!checked && drv_mpcheck(data, size, err, errlen) != 0) {
        return -1;
    }
    size_t offset = 0;
    if (msgpack_unpack(data, size, &offset, zone, root) != MSGPACK_UNPACK_SUCCESS) {
        snprintf(err, errlen, checked ? "records nest deeper than %d levels" : "malformed msgpack",
                 DRV_MPCHECK_MAX_DEPTH);
        return -1;
    }
    if (root->type == MSGPACK_OBJECT_MAP) {
        const msgpack_object *dup = checked ? NULL : s_find_duplicate(root, zone);
        if (dup) {
            return s_refuse_duplicate(dup, 0, false, err, errlen);
        }
        *records = root;
        return 1;
    }
    if (root->type != MSGPACK_OBJECT_ARRAY) {
        snprintf(err, errlen, "message is neither a map (record) nor an array of maps (batch)");
        return -1;
    }
    for (uint32_t i = 0; i < root->via.array.size; i++) {
        if (root->via.array.ptr[i].type != MSGPACK_OBJECT_MAP) {
            snprintf(err, errlen, "batch item %u is not a map", i);
            return -1;
        }
        const msgpack_object *dup = checked ? NULL : s_find_duplicate(&root->via.array.ptr[i], zone);
        if (dup) {
            return s_refuse_duplicate(dup, i, true, err, errlen);
        }
    }
    *records = root->via.array.ptr;
    return (int)root->via.array.size;
}

int drv_batch_decode(const void *data, size_t size, msgpack_zone *zone, msgpack_object *root,
                     const msgpack_object **records, char *err, size_t errlen)
{
    return s_decode(data, size, zone, root, records, false, err, errlen);
}

int drv_batch_decode_checked(const void *data, size_t size, msgpack_zone *zone, msgpack_object *root,
                             const msgpack_object **records, char *err, size_t errlen)
{
    return s_decode(data, size, zone, root, records, true, err, errlen);
}
