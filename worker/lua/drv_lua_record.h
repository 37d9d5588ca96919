/*  drv_lua_record — a record (msgpack object) as a Lua table, and what
    the way back (drv_lua_back.h) needs of it.
    Maps become tables keyed by strings, arrays become sequences marked with
    one shared metatable (so an empty array comes back as an array),
    integers stay integers (64 bits), floats floats, str and bin strings,
    nil nil. Back from Lua, a string that is valid UTF-8 is a str, any other
    a bin; a table marked as an array, or whose keys are exactly 1..n, is an
    array, any other a map whose keys must be strings. */
#ifndef DRV_LUA_RECORD_H
#define DRV_LUA_RECORD_H

#include <lua.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DRV_LUA_RECORD_MAX_DEPTH 32 // as deep as records nest (drv_mpcheck)

//  Memory for what comes back from Lua: lives as long as the records.
typedef void *(*drv_lua_alloc_fn)(void *arg, size_t size);

//  The strings a push made, by where Lua keeps their bytes: a string that
//  comes back unchanged points at the record's own bytes again (no copy,
//  no UTF-8 check, str or bin as it was). A hit is checked byte for byte,
//  so a string Lua freed and whose address a new one took is never
//  mistaken for it.
//  It also caches the keys of the maps it pushed, as Lua strings, so that
//  the next record's keys are found without Lua interning them again; one
//  memo serves one Lua state.
#define DRV_LUA_MEMO_SLOTS 256
#define DRV_LUA_KEY_SLOTS 256
#define DRV_LUA_KEY_MAX 40 // bytes: Lua interns strings this short, and only those pay for it
typedef struct {
    struct {
        const char *text;          // Lua's bytes
        const msgpack_object *obj; // the record's string
        uint32_t stamp;            // the push it belongs to
    } slot[DRV_LUA_MEMO_SLOTS];
    uint32_t stamp;
    uint32_t count;
    struct {
        const char *text; // the bytes of a string the state's key cache holds
        uint32_t len;     // 0: an empty slot
    } keys[DRV_LUA_KEY_SLOTS];
    lua_State *state; // whose strings keys[] points at
    int keys_index;   // the key cache's place on the stack, while pushing
} drv_lua_memo_t;

//  Makes the array metatable; call once per state, before the first push.
void drv_lua_record_setup(lua_State *L);
//  Pushes obj onto L's stack as a Lua value, noting its strings in memo
//  (NULL: none), which it clears first.
void drv_lua_push_object(lua_State *L, const msgpack_object *obj, drv_lua_memo_t *memo);
//  memo cleared for a new record (what drv_lua_push_object does first).
void drv_lua_memo_begin(lua_State *L, drv_lua_memo_t *memo);
//  Pushes obj as drv_lua_push_object does, noting its strings in memo
//  beside what was noted since drv_lua_memo_begin (a lazy record's fields,
//  pushed as they are read).
void drv_lua_push_more(lua_State *L, const msgpack_object *obj, drv_lua_memo_t *memo);
//  The record's string whose bytes Lua keeps at text (len long) in this
//  record's memo, or NULL.
const msgpack_object *drv_lua_memo_recall(const drv_lua_memo_t *memo, const char *text, size_t len);
//  True when the table at index carries the array mark.
bool drv_lua_marked_array(lua_State *L, int index);

#endif
