/*  drv_record — looking up and editing the keys of a record (a msgpack map)
    without copying it: the helpers processors share. */
#ifndef DRV_RECORD_H
#define DRV_RECORD_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Two string keys with the same bytes.
bool drv_record_same_key(const msgpack_object *a, const msgpack_object *b);
//  Index of key among n pairs, or -1.
int drv_record_find(const msgpack_object_kv *kv, size_t n, const msgpack_object *key);
//  Removes pair index, keeping the order of the others.
void drv_record_remove(msgpack_object_kv *kv, size_t *n, int index);

#endif
