/*  drv_record — see drv_record.h. */
#include "drv_record.h"

#include "drover/drv_keyprint.h"

#include <stdint.h>
#include <string.h>

#define LINEAR_MAX 16 // up to this many pairs, a lookup walks them

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

double drv_record_number(const msgpack_object *o)
{
    if (!o) {
        return 0;
    }
    switch (o->type) {
    case MSGPACK_OBJECT_FLOAT64:
    case MSGPACK_OBJECT_FLOAT32:
        return o->via.f64;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        return (double)o->via.u64;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return (double)o->via.i64;
    default:
        return 0;
    }
}

void drv_record_remove(msgpack_object_kv *kv, size_t *n, int index)
{
    memmove(&kv[index], &kv[index + 1], (*n - (size_t)index - 1) * sizeof *kv);
    (*n)--;
}

//  A log record without an observed time (drv_record_observed).
static bool s_unobserved(const msgpack_object *record)
{
    if (record->type != MSGPACK_OBJECT_MAP) {
        return false;
    }
    for (uint32_t i = 0; i < record->via.map.size; i++) {
        const msgpack_object *key = &record->via.map.ptr[i].key;
        const msgpack_object *val = &record->via.map.ptr[i].val;
        if (key->type != MSGPACK_OBJECT_STR) {
            continue;
        }
        if (key->via.str.size == 23 && !memcmp(key->via.str.ptr, "observed_time_unix_nano", 23)) {
            return false;
        }
        if (key->via.str.size == 6 && !memcmp(key->via.str.ptr, "signal", 6) &&
            !(val->type == MSGPACK_OBJECT_STR && val->via.str.size == 3 && !memcmp(val->via.str.ptr, "log", 3))) {
            return false;
        }
    }
    return true;
}

const msgpack_object *drv_record_observed(msgpack_zone *zone, const msgpack_object *records, size_t n, uint64_t ns)
{
    size_t first = 0;
    while (first < n && !s_unobserved(&records[first])) {
        first++;
    }
    if (first == n) {
        return records;
    }
    msgpack_object *out = msgpack_zone_malloc(zone, n * sizeof *out);
    if (!out) {
        return NULL;
    }
    memcpy(out, records, n * sizeof *out);
    for (size_t i = first; i < n; i++) {
        if (i > first && !s_unobserved(&out[i])) {
            continue;
        }
        uint32_t size = out[i].via.map.size;
        msgpack_object_kv *kv = msgpack_zone_malloc(zone, (size + 1) * sizeof *kv);
        if (!kv) {
            return NULL;
        }
        if (size > 0) {
            memcpy(kv, out[i].via.map.ptr, size * sizeof *kv);
        }
        kv[size].key = (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {23, "observed_time_unix_nano"}};
        kv[size].val = (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = ns};
        out[i].via.map.ptr = kv;
        out[i].via.map.size = size + 1;
    }
    return out;
}

//  The slot of key in a table of 2^bits slots holding indexes into kv: its
//  own, or the empty one where it goes. The print's top bits: its low ones
//  come from the key's last bytes alone (a product's low bits depend only
//  on its factors' low bits), and keys alike at the end would pile up.
static size_t s_slot(const uint32_t *table, unsigned bits, const msgpack_object_kv *kv, const msgpack_object *key)
{
    size_t slots = (size_t)1 << bits;
    size_t at = (size_t)(drv_keyprint(key->via.str.ptr, key->via.str.size) >> (64 - bits));
    while (table[at] != UINT32_MAX && !drv_record_same_key(&kv[table[at]].key, key)) {
        at = (at + 1) & (slots - 1);
    }
    return at;
}

msgpack_object_kv *drv_record_merge(msgpack_zone *zone, const msgpack_object_kv *base, size_t n,
                                    const msgpack_object_kv *add, size_t added, size_t *count)
{
    size_t total = n + added;
    msgpack_object_kv *kv = msgpack_zone_malloc(zone, (total ? total : 1) * sizeof *kv);
    if (!kv || total > UINT32_MAX / 2) {
        return NULL;
    }
    if (n) {
        memcpy(kv, base, n * sizeof *kv);
    }
    if (total <= LINEAR_MAX) {
        for (size_t i = 0; i < added; i++) {
            int index = drv_record_find(kv, n, &add[i].key);
            if (index >= 0) {
                kv[index].val = add[i].val;
            } else {
                kv[n++] = add[i];
            }
        }
        *count = n;
        return kv;
    }
    unsigned bits = 5;
    while (((size_t)1 << bits) < 2 * total) {
        bits++;
    }
    size_t slots = (size_t)1 << bits;
    uint32_t *table = msgpack_zone_malloc(zone, slots * sizeof *table);
    if (!table) {
        return NULL;
    }
    memset(table, 0xff, slots * sizeof *table);
    for (size_t i = 0; i < n; i++) { // a record's keys are unique; only string keys can meet add's
        if (kv[i].key.type == MSGPACK_OBJECT_STR) {
            table[s_slot(table, bits, kv, &kv[i].key)] = (uint32_t)i;
        }
    }
    for (size_t i = 0; i < added; i++) {
        if (add[i].key.type != MSGPACK_OBJECT_STR) {
            kv[n++] = add[i];
            continue;
        }
        size_t at = s_slot(table, bits, kv, &add[i].key);
        if (table[at] != UINT32_MAX) {
            kv[table[at]].val = add[i].val;
        } else {
            table[at] = (uint32_t)n;
            kv[n++] = add[i];
        }
    }
    *count = n;
    return kv;
}
