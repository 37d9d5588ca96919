/*  drv_record_path — a field reached through maps (drover/drv_path.h's
    paths, docs/operations.md "Record paths"): read, set and deleted
    without changing the record given — what changes is built again in a
    zone, the rest shared. */
#ifndef DRV_RECORD_PATH_H
#define DRV_RECORD_PATH_H

#include "drover/drv_path.h"

#include <msgpack.h>
#include <stdbool.h>

typedef struct {
    msgpack_object keys[DRV_PATH_MAX_DEPTH]; // strings, living as long as whoever made them
    int depth;
} drv_record_path_t;

//  The value at path in record, or NULL (a map on the way is missing, or not a map).
const msgpack_object *drv_record_path_get(const msgpack_object *record, const drv_record_path_t *path);
//  *record with value at path: maps on the way made (or a value that is no
//  map replaced by one) in zone. false when out of memory (*record as it was).
bool drv_record_path_set(msgpack_zone *zone, msgpack_object *record, const drv_record_path_t *path,
                         const msgpack_object *value);
//  *record without what is at path (as it was when there is nothing). false when out of memory.
bool drv_record_path_delete(msgpack_zone *zone, msgpack_object *record, const drv_record_path_t *path);

#endif
