/*  processor:transform — set, rename, delete, applied in that order. A
    record is never changed in place: the new map is built in the batch
    zone, so a node that fans out hands each next node the same input. */
#include "drv_node.h"
#include "drv_schemas.h"
#include "drv_record.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    msgpack_object from; // key to rename
    msgpack_object to;   // its new name
} rename_t;

typedef struct {
    msgpack_object_kv *set;
    size_t set_count;
    rename_t *renames;
    size_t rename_count;
    msgpack_object *deletes;
    size_t delete_count;
} transform_t;

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    transform_t *self = calloc(1, sizeof *self);
    node->state = self;
    json_t *set = json_object_get(config, "set");
    json_t *rename = json_object_get(config, "rename");
    json_t *del = json_object_get(config, "delete");
    self->set = calloc(json_object_size(set) + 1, sizeof *self->set);
    self->renames = calloc(json_object_size(rename) + 1, sizeof *self->renames);
    self->deletes = calloc(json_array_size(del) + 1, sizeof *self->deletes);
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)set, key, value)
    {
        msgpack_object_kv *kv = &self->set[self->set_count++];
        if (drv_node_string_object(node, key, &kv->key) || drv_node_object(node, value, &kv->val)) {
            goto failed;
        }
    }
    json_object_foreach((json_t *)rename, key, value)
    {
        rename_t *r = &self->renames[self->rename_count++];
        if (drv_node_string_object(node, key, &r->from) ||
            drv_node_string_object(node, json_string_value(value), &r->to)) {
            goto failed;
        }
    }
    size_t index;
    json_array_foreach(del, index, value)
    {
        if (drv_node_string_object(node, json_string_value(value), &self->deletes[self->delete_count++])) {
            goto failed;
        }
    }
    return 0;
failed:
    snprintf(err, errlen, "node %s: cannot encode transform", node->id);
    return -1;
}

static void s_destroy(drv_node_t *node)
{
    transform_t *self = node->state;
    if (self) {
        free(self->set);
        free(self->renames);
        free(self->deletes);
        free(self);
    }
}

static msgpack_object s_transform(drv_node_t *node, const transform_t *self, const msgpack_object *record)
{
    size_t capacity = record->via.map.size + self->set_count;
    msgpack_object_kv *kv = drv_node_alloc(node, (capacity ? capacity : 1) * sizeof *kv);
    size_t n = record->via.map.size;
    memcpy(kv, record->via.map.ptr, n * sizeof *kv);
    for (size_t i = 0; i < self->set_count; i++) {
        int index = drv_record_find(kv, n, &self->set[i].key);
        if (index >= 0) {
            kv[index].val = self->set[i].val;
        } else {
            kv[n++] = self->set[i];
        }
    }
    for (size_t i = 0; i < self->rename_count; i++) {
        int index = drv_record_find(kv, n, &self->renames[i].from);
        if (index < 0) {
            continue;
        }
        int clash = drv_record_find(kv, n, &self->renames[i].to);
        if (clash >= 0 && clash != index) {
            drv_record_remove(kv, &n, clash); // the renamed key wins
            if (clash < index) {
                index--;
            }
        }
        kv[index].key = self->renames[i].to;
    }
    for (size_t i = 0; i < self->delete_count; i++) {
        int index = drv_record_find(kv, n, &self->deletes[i]);
        if (index >= 0) {
            drv_record_remove(kv, &n, index);
        }
    }
    msgpack_object out = {.type = MSGPACK_OBJECT_MAP};
    out.via.map.ptr = kv;
    out.via.map.size = (uint32_t)n;
    return out;
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    msgpack_object *out = drv_node_alloc(node, (n ? n : 1) * sizeof *out);
    for (size_t i = 0; i < n; i++) {
        out[i] = s_transform(node, node->state, &records[i]);
    }
    drv_node_forward(node, out, n);
}

const drv_node_kind_t drv_processor_transform = {
    .schema = &drv_schema_processor_transform,
    .init = s_init,
    .run = s_run,
    .destroy = s_destroy,
};
