/*  drv_lua — one sandboxed Lua 5.4 state running a processor:lua script.

    The sandbox opens base (without load, loadstring, dofile, loadfile,
    require), string, table, math and utf8; nothing that reaches files,
    processes, the loader or debug. print goes to the instance's log (at
    most 5 lines a second). Every call runs under an instruction limit
    (a count hook: Lua 5.4 has no compiled traces for it to miss) and the
    whole state under a memory limit (its allocator refuses past it); both
    end the call with a Lua error and leave the state usable. */
#ifndef DRV_LUA_H
#define DRV_LUA_H

#include "drv_lua_record.h"

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

typedef struct drv_lua_t drv_lua_t;

typedef struct {
    const char *source; // the script's text
    size_t length;
    const char *function;     // called per record ("process")
    int64_t max_instructions; // per call (0: no limit)
    int64_t max_memory_bytes; // the whole state
    const char *name;         // for log lines (the node id)
    bool lazy_records;        // record: lazy (drv_lua_lazy.h), else tables
} drv_lua_options_t;

//  Compiles source as text (never bytecode) without running it: 0, or -1
//  with "line N: what" in err. What the spec validator calls.
int drv_lua_compile_check(const char *source, size_t length, char *err, size_t errlen);
//  drv_script_check_fn (drover/drv_node_schema.h) over drv_lua_compile_check:
//  what the worker's own programs register.
int drv_lua_script_check(void *arg, const char *source, size_t length, char *err, size_t errlen);
//  drover-worker --check-script: the script on stdin, compiled; exit 0, or
//  1 with the error on stdout (2: it could not be read).
int drv_lua_check_stdin(void);

//  A new state with the script's top level run (under both limits) and its
//  function found, or NULL with the reason in err.
drv_lua_t *drv_lua_new(const drv_lua_options_t *options, char *err, size_t errlen);
void drv_lua_destroy(drv_lua_t **self_p);

//  What drv_lua_run reports for each record, in order: what the function
//  returned as count records (0: nil or an empty list) in memory from
//  alloc, or, when error is not NULL, why the call failed (a Lua error, a
//  limit, a value that is not a record).
typedef void (*drv_lua_result_fn)(void *arg, size_t index, const msgpack_object *out, size_t count, const char *error);

//  Calls the function with each of n records, in one protected call for
//  as long as none fails (a failure costs one more). The state stays
//  usable whatever the script does.
void drv_lua_run(drv_lua_t *self, const msgpack_object *records, size_t n, drv_lua_alloc_fn alloc, void *alloc_arg,
                 drv_lua_result_fn result, void *result_arg);

#endif
