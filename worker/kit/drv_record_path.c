/*  drv_record_path — see the header. */
#include "drv_record_path.h"
#include "drv_record.h"

#include <string.h>

static const msgpack_object *s_child(const msgpack_object *map, const msgpack_object *key)
{
    if (!map || map->type != MSGPACK_OBJECT_MAP) {
        return NULL;
    }
    int index = drv_record_find(map->via.map.ptr, map->via.map.size, key);
    return index < 0 ? NULL : &map->via.map.ptr[index].val;
}

const msgpack_object *drv_record_path_get(const msgpack_object *record, const drv_record_path_t *path)
{
    const msgpack_object *at = record;
    for (int i = 0; at && i < path->depth; i++) {
        at = s_child(at, &path->keys[i]);
    }
    return at;
}

//  map (NULL, or not a map: made anew) with keys[0..depth) leading to value, into *out.
static bool s_set(msgpack_zone *zone, const msgpack_object *map, const msgpack_object *keys, int depth,
                  const msgpack_object *value, msgpack_object *out)
{
    size_t n = map && map->type == MSGPACK_OBJECT_MAP ? map->via.map.size : 0;
    int index = n ? drv_record_find(map->via.map.ptr, n, &keys[0]) : -1;
    msgpack_object_kv *kv = msgpack_zone_malloc(zone, (n + 1) * sizeof *kv);
    if (!kv) {
        return false;
    }
    if (n) {
        memcpy(kv, map->via.map.ptr, n * sizeof *kv);
    }
    msgpack_object child = *value;
    if (depth > 1 && !s_set(zone, index >= 0 ? &kv[index].val : NULL, keys + 1, depth - 1, value, &child)) {
        return false;
    }
    if (index >= 0) {
        kv[index].val = child;
    } else {
        kv[n].key = keys[0];
        kv[n++].val = child;
    }
    *out = (msgpack_object){.type = MSGPACK_OBJECT_MAP};
    out->via.map.ptr = kv;
    out->via.map.size = (uint32_t)n;
    return true;
}

bool drv_record_path_set(msgpack_zone *zone, msgpack_object *record, const drv_record_path_t *path,
                         const msgpack_object *value)
{
    msgpack_object out;
    if (path->depth == 0 || !s_set(zone, record, path->keys, path->depth, value, &out)) {
        return false;
    }
    *record = out;
    return true;
}

//  map without keys[0..depth)'s last, into *out (*out = *map when it has none).
static bool s_delete(msgpack_zone *zone, const msgpack_object *map, const msgpack_object *keys, int depth,
                     msgpack_object *out)
{
    *out = *map;
    int index = map->type == MSGPACK_OBJECT_MAP ? drv_record_find(map->via.map.ptr, map->via.map.size, &keys[0]) : -1;
    if (index < 0) {
        return true;
    }
    size_t n = map->via.map.size;
    msgpack_object_kv *kv = msgpack_zone_malloc(zone, n * sizeof *kv);
    if (!kv) {
        return false;
    }
    memcpy(kv, map->via.map.ptr, n * sizeof *kv);
    if (depth == 1) {
        drv_record_remove(kv, &n, index);
    } else if (!s_delete(zone, &map->via.map.ptr[index].val, keys + 1, depth - 1, &kv[index].val)) {
        return false;
    }
    out->via.map.ptr = kv;
    out->via.map.size = (uint32_t)n;
    return true;
}

bool drv_record_path_delete(msgpack_zone *zone, msgpack_object *record, const drv_record_path_t *path)
{
    msgpack_object out;
    if (path->depth == 0 || !s_delete(zone, record, path->keys, path->depth, &out)) {
        return false;
    }
    *record = out;
    return true;
}
