/*  processor:lua — calls the script's function for each record (drv_lua:
    one sandboxed Lua 5.4 state per instance, its globals kept from call to
    call). A table returned is emitted, nil or {} drops the record, a list
    of tables emits each. A Lua error, a limit reached or a value that is
    not a record counts in errors and the record is dropped (on_error: drop)
    or passed on unchanged (pass).

    Its schema (worker/schemas/drv_schema_processor_lua.c) compiles the
    script when the spec is validated and reads script_file. */
#include "drv_lua.h"
#include "drv_node.h"
#include "drv_schemas.h"

#include "drover/drv_file.h"
#include "drover/drv_limits.h"
#include "drover/drv_utf8.h"

#include <ctype.h>
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    drv_lua_t *lua;
    bool pass_on_error;
} lua_node_t;

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    json_t *script = json_object_get(config, "script");
    drv_lua_options_t options = {
        .source = json_string_value(script),
        .length = json_string_length(script),
        .function = json_string_value(json_object_get(config, "function")),
        .max_instructions = json_integer_value(json_object_get(config, "max_instructions")),
        .max_memory_bytes = json_integer_value(json_object_get(config, "max_memory_bytes")),
        .name = node->id,
        .lazy_records = strcmp(json_string_value(json_object_get(config, "record")), "lazy") == 0,
    };
    char reason[400];
    drv_lua_t *lua = drv_lua_new(&options, reason, sizeof reason);
    if (!lua) {
        snprintf(err, errlen, "node %s: the script cannot start: %s", node->id, reason);
        return -1;
    }
    lua_node_t *self = calloc(1, sizeof *self);
    self->lua = lua;
    self->pass_on_error = strcmp(json_string_value(json_object_get(config, "on_error")), "pass") == 0;
    node->state = self;
    return 0;
}

static void s_destroy(drv_node_t *node)
{
    lua_node_t *self = node->state;
    if (self) {
        drv_lua_destroy(&self->lua);
        free(self);
    }
}

static void *s_alloc(void *arg, size_t size)
{
    return drv_node_alloc(arg, size);
}

//  What a batch emits so far.
typedef struct {
    drv_node_t *node;
    const msgpack_object *records;
    msgpack_object *out;
    size_t count;
    size_t capacity;
} emitted_t;

static void s_result(void *arg, size_t index, const msgpack_object *out, size_t count, const char *error)
{
    emitted_t *e = arg;
    lua_node_t *self = e->node->state;
    if (error) {
        drv_node_record_error(e->node, error);
        if (self->pass_on_error) {
            out = &e->records[index];
            count = 1;
        }
    }
    if (count == 0) {
        drv_node_count_dropped(e->node, 1);
        return;
    }
    if (e->count + count > e->capacity) {
        e->capacity = (e->count + count) * 2;
        msgpack_object *grown = drv_node_alloc(e->node, e->capacity * sizeof *grown);
        memcpy(grown, e->out, e->count * sizeof *grown);
        e->out = grown;
    }
    memcpy(e->out + e->count, out, count * sizeof *out);
    e->count += count;
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    lua_node_t *self = node->state;
    emitted_t e = {node, records, NULL, 0, n ? n : 1};
    e.out = drv_node_alloc(node, e.capacity * sizeof *e.out);
    drv_lua_run(self->lua, records, n, s_alloc, node, s_result, &e);
    drv_node_forward(node, e.out, e.count);
}

const drv_node_kind_t drv_processor_lua = {
    .schema = &drv_schema_processor_lua,
    .init = s_init,
    .run = s_run,
    .destroy = s_destroy,
};
