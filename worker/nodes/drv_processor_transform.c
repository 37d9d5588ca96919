/*  processor:transform — set, rename, delete, applied in that order, each
    naming a top-level field or a path into maps (docs/operations.md,
    "Record paths": attributes["http.method"]); then its OTTL statements,
    in order (docs/ottl.md), a statement that fails going by error_mode:
    propagate (the record counted in errors, handed on as it came),
    ignore (the statement skipped, counted), silent (skipped). A record is never changed
    in place: the new map is built in the batch zone, so a node that fans
    out hands each next node the same input. When every name is a
    top-level field, the record's map is copied once for all of them. */
#include "drv_node.h"
#include "drv_ottl_edit.h"
#include "drv_schemas.h"
#include "drv_record.h"
#include "drv_record_path.h"

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
    //  The same as paths (set: the values above), used when any is one.
    bool paths;
    drv_record_path_t *set_paths, *rename_from, *rename_to, *delete_paths;
    bool old; // any set, rename or delete
    drv_ottl_statement_t *statements;
    size_t statement_count;
    int mode; // error_mode: 0 propagate, 1 ignore, 2 silent
} transform_t;

//  A name of the config as a path, and whether it goes into maps.
static int s_path(drv_node_t *node, const char *name, drv_record_path_t *out, bool *paths)
{
    int rc = drv_node_path(node, name, out);
    *paths = *paths || out->depth > 1;
    return rc;
}

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
    self->set_paths = calloc(json_object_size(set) + 1, sizeof *self->set_paths);
    self->rename_from = calloc(json_object_size(rename) + 1, sizeof *self->rename_from);
    self->rename_to = calloc(json_object_size(rename) + 1, sizeof *self->rename_to);
    self->delete_paths = calloc(json_array_size(del) + 1, sizeof *self->delete_paths);
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)set, key, value)
    {
        msgpack_object_kv *kv = &self->set[self->set_count];
        if (drv_node_string_object(node, key, &kv->key) || drv_node_object(node, value, &kv->val) ||
            s_path(node, key, &self->set_paths[self->set_count++], &self->paths)) {
            goto failed;
        }
    }
    json_object_foreach((json_t *)rename, key, value)
    {
        rename_t *r = &self->renames[self->rename_count];
        if (drv_node_string_object(node, key, &r->from) ||
            drv_node_string_object(node, json_string_value(value), &r->to) ||
            s_path(node, key, &self->rename_from[self->rename_count], &self->paths) ||
            s_path(node, json_string_value(value), &self->rename_to[self->rename_count++], &self->paths)) {
            goto failed;
        }
    }
    size_t index;
    json_array_foreach(del, index, value)
    {
        if (drv_node_string_object(node, json_string_value(value), &self->deletes[self->delete_count]) ||
            s_path(node, json_string_value(value), &self->delete_paths[self->delete_count++], &self->paths)) {
            goto failed;
        }
    }
    self->old = self->set_count || self->rename_count || self->delete_count;
    const char *mode = json_string_value(json_object_get(config, "error_mode"));
    self->mode = mode && !strcmp(mode, "ignore") ? 1 : mode && !strcmp(mode, "silent") ? 2 : 0;
    json_t *statements = json_object_get(config, "statements");
    self->statements = calloc(json_array_size(statements) + 1, sizeof *self->statements);
    json_array_foreach(statements, index, value)
    {
        char why[400];
        if (drv_ottl_statement_init(&self->statements[index], json_string_value(value), why, sizeof why) != 0) {
            snprintf(err, errlen, "node %s: statement %zu: %s", node->id, index, why);
            return -1;
        }
        self->statement_count++;
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
        free(self->set_paths);
        free(self->rename_from);
        free(self->rename_to);
        free(self->delete_paths);
        for (size_t i = 0; i < self->statement_count; i++) {
            drv_ottl_statement_fini(&self->statements[i]);
        }
        free(self->statements);
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

//  The same through paths: each step builds again what it changes.
static msgpack_object s_transform_paths(drv_node_t *node, const transform_t *self, const msgpack_object *record)
{
    msgpack_zone *zone = drv_node_zone(node);
    msgpack_object out = *record;
    for (size_t i = 0; i < self->set_count; i++) {
        drv_record_path_set(zone, &out, &self->set_paths[i], &self->set[i].val);
    }
    for (size_t i = 0; i < self->rename_count; i++) {
        const msgpack_object *found = drv_record_path_get(&out, &self->rename_from[i]);
        msgpack_object value = found ? *found : (msgpack_object){0};
        if (found && drv_record_path_delete(zone, &out, &self->rename_from[i])) {
            drv_record_path_set(zone, &out, &self->rename_to[i], &value);
        }
    }
    for (size_t i = 0; i < self->delete_count; i++) {
        drv_record_path_delete(zone, &out, &self->delete_paths[i]);
    }
    return out;
}

//  The statements on one record, in order.
static msgpack_object s_statements(drv_node_t *node, transform_t *self, const msgpack_object *input,
                                   msgpack_object record)
{
    msgpack_object cache = {.type = MSGPACK_OBJECT_MAP}; // cache[...]: this record's, for its statements
    for (size_t k = 0; k < self->statement_count; k++) {
        char why[300];
        if (drv_ottl_statement_run(&self->statements[k], drv_node_zone(node), &record, &cache, why, sizeof why) >= 0) {
            continue;
        }
        if (self->mode != 2) {
            drv_node_record_error(node, why);
        }
        if (self->mode == 0) {
            return *input; // propagate: as it came
        }
    }
    return record;
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    transform_t *self = node->state;
    msgpack_object *out = drv_node_alloc(node, (n ? n : 1) * sizeof *out);
    for (size_t i = 0; i < n; i++) {
        out[i] = !self->old    ? records[i]
                 : self->paths ? s_transform_paths(node, self, &records[i])
                               : s_transform(node, self, &records[i]);
        if (self->statement_count) {
            out[i] = s_statements(node, self, &records[i], out[i]);
        }
    }
    drv_node_forward(node, out, n);
}

const drv_node_kind_t drv_processor_transform = {
    .schema = &drv_schema_processor_transform,
    .init = s_init,
    .run = s_run,
    .destroy = s_destroy,
};
