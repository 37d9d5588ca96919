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
//  The pairs of a map (base, n of them; NULL when none) with add's after
//  them, a pair of add replacing the one of the same key (the later of
//  two in add wins), in zone: the pairs and *count, or NULL when out of
//  memory. Linear in n + added (a hash of the keys past a few), so that a
//  record of a hundred thousand keys costs what it weighs.
msgpack_object_kv *drv_record_merge(msgpack_zone *zone, const msgpack_object_kv *base, size_t n,
                                    const msgpack_object_kv *add, size_t added, size_t *count);
//  A number as a double (0 when o is none: a string, a map, NULL).
double drv_record_number(const msgpack_object *o);
//  Removes pair index, keeping the order of the others.
void drv_record_remove(msgpack_object_kv *kv, size_t *n, int index);
//  records with observed_time_unix_nano = ns added to each map that has
//  none and is a log (its signal is "log" or it says none: spans and
//  metrics have no observed time): records itself when none lacked it,
//  else a copy in zone (NULL when out of memory). docs/nodes.md: "Every
//  receiver sets observed_time_unix_nano".
const msgpack_object *drv_record_observed(msgpack_zone *zone, const msgpack_object *records, size_t n, uint64_t ns);

#endif
