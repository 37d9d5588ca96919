/*  drv_lua_back — a Lua value back into a record: a string that is valid
    UTF-8 is a str, any other a bin; a table marked as an array, or whose
    keys are exactly 1..n, is an array, any other a map whose keys must be
    strings; a lazy record (drv_lua_lazy.h) is its record with what the
    script changed. */
#ifndef DRV_LUA_BACK_H
#define DRV_LUA_BACK_H

#include "drv_lua_record.h"

//  The Lua value at index as a msgpack object in memory from alloc,
//  reusing the strings memo noted (NULL: copies every string). What it
//  allocates is taken from *budget (bytes), which it lowers; past it the
//  copy fails ("memory limit reached").
//  Returns 0, or -1 with the reason in err (a function, a cycle, a key
//  that is not a string...). Leaves the stack as it found it.
int drv_lua_to_object(lua_State *L, int index, drv_lua_alloc_fn alloc, void *arg, const drv_lua_memo_t *memo,
                      size_t *budget, msgpack_object *out, char *err, size_t errlen);

#endif
