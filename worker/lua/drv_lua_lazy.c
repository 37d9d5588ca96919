/*  drv_lua_lazy — a record as a lazy table (see the header). One lazy
    table is alive at a time, the call's: the registry holds it and its
    overlay (made at the first write or the first nested value read); the
    metamethods find lazy as their upvalue, the way back in the live
    metatable (its [1] the live tag, its [2] lazy). */
#include "drv_lua_lazy.h"

#include "drover/drv_time.h"

#include <lauxlib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

//  Tags a script cannot forge (it makes no light userdata): these
//  variables' addresses.
static const char s_live_tag = 0; // [1] of the live metatable
static const char s_dead_tag = 0; // [1] of an ended one's
static const char s_deleted = 0;  // an overlay's value for a field deleted

static const char *const s_ended = "a lazy record (record: lazy) is usable only in the call it was given to; copy "
                                   "the fields a later call needs";

static drv_lua_lazy_t *s_lazy(lua_State *L)
{
    return lua_touserdata(L, lua_upvalueindex(1));
}

#define SCANS_PER_KEY 4 // a record's keys compared this many times over in scans: it is indexed

static uint64_t s_hash(const drv_lua_lazy_t *lazy, const char *bytes, size_t len)
{
    uint64_t h = lazy->seed ^ 0xcbf29ce484222325ull; // FNV-1a over every byte, seeded
    for (size_t i = 0; i < len; i++) {
        h = (h ^ (uint8_t)bytes[i]) * 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

static bool s_same(const msgpack_object *key, const char *bytes, size_t len)
{
    return key->type == MSGPACK_OBJECT_STR && key->via.str.size == len && memcmp(key->via.str.ptr, bytes, len) == 0;
}

//  The record's string keys into lazy's slots; false out of memory (the
//  scans go on).
static bool s_index_keys(drv_lua_lazy_t *lazy)
{
    const msgpack_object *record = lazy->record;
    size_t size = 16;
    while (size < 2 * (size_t)record->via.map.size) {
        size *= 2;
    }
    if (size > lazy->slot_count) {
        uint32_t *grown = realloc(lazy->slots, size * sizeof *grown);
        if (!grown) {
            return false;
        }
        lazy->slots = grown;
        lazy->slot_count = size;
    }
    memset(lazy->slots, 0, size * sizeof *lazy->slots);
    for (uint32_t i = 0; i < record->via.map.size; i++) {
        const msgpack_object *key = &record->via.map.ptr[i].key;
        if (key->type == MSGPACK_OBJECT_STR) {
            size_t at = s_hash(lazy, key->via.str.ptr, key->via.str.size) & (size - 1);
            while (lazy->slots[at]) {
                at = (at + 1) & (size - 1);
            }
            lazy->slots[at] = i + 1;
        }
    }
    lazy->indexed = true;
    return true;
}

int64_t drv_lua_lazy_field(drv_lua_lazy_t *lazy, lua_State *L, int index)
{
    const msgpack_object *record = lazy->record;
    if (!record || lua_type(L, index) != LUA_TSTRING) {
        return -1;
    }
    size_t len;
    const char *key = lua_tolstring(L, index, &len);
    uint32_t n = record->via.map.size;
    if (!lazy->indexed && lazy->scanned > (uint64_t)SCANS_PER_KEY * n + 64) {
        s_index_keys(lazy);
    }
    if (lazy->indexed) {
        size_t mask = lazy->slot_count - 1;
        for (size_t at = s_hash(lazy, key, len) & mask; lazy->slots[at]; at = (at + 1) & mask) {
            uint32_t i = lazy->slots[at] - 1;
            if (s_same(&record->via.map.ptr[i].key, key, len)) {
                return i;
            }
        }
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (s_same(&record->via.map.ptr[i].key, key, len)) {
            lazy->scanned += i + 1;
            return i;
        }
    }
    lazy->scanned += n;
    return -1;
}

//  The record's value of the string key at index, or NULL.
static const msgpack_object *s_field(drv_lua_lazy_t *lazy, lua_State *L, int index)
{
    int64_t at = drv_lua_lazy_field(lazy, L, index);
    return at >= 0 ? &lazy->record->via.map.ptr[at].val : NULL;
}

//  Pushes the overlay, made when there is none: its index.
static int s_overlay(lua_State *L, const drv_lua_lazy_t *lazy)
{
    if (lua_rawgeti(L, LUA_REGISTRYINDEX, lazy->overlay_ref) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, 0, 4);
        lua_pushvalue(L, -1);
        lua_rawseti(L, LUA_REGISTRYINDEX, lazy->overlay_ref);
    }
    return lua_gettop(L);
}

//  Pushes field as a Lua value; a table (a nested map or list) is kept in
//  the overlay under the key at key_index, so that what the script changes
//  in it is the record's.
static void s_push_field(lua_State *L, drv_lua_lazy_t *lazy, const msgpack_object *field, int key_index)
{
    drv_lua_push_more(L, field, lazy->memo);
    if (field->type == MSGPACK_OBJECT_MAP || field->type == MSGPACK_OBJECT_ARRAY) {
        int value = lua_gettop(L);
        int overlay = s_overlay(L, lazy);
        lua_pushvalue(L, key_index);
        lua_pushvalue(L, value);
        lua_rawset(L, overlay);
        lua_pop(L, 1);
    }
}

//  __index(t, k): the overlay's value, else the record's.
static int s_index(lua_State *L)
{
    drv_lua_lazy_t *lazy = s_lazy(L);
    if (lua_rawgeti(L, LUA_REGISTRYINDEX, lazy->overlay_ref) == LUA_TTABLE) {
        lua_pushvalue(L, 2);
        if (lua_rawget(L, -2) != LUA_TNIL) {
            if (lua_touserdata(L, -1) == &s_deleted) {
                lua_pushnil(L);
            }
            return 1;
        }
    }
    const msgpack_object *field = s_field(lazy, L, 2);
    if (!field) {
        return 0;
    }
    luaL_checkstack(L, 6, "record nested too deep");
    s_push_field(L, lazy, field, 2);
    return 1;
}

//  __newindex(t, k, v): into the overlay (nil: the deleted mark). The
//  table stays empty, so every write comes here.
static int s_newindex(lua_State *L)
{
    int overlay = s_overlay(L, s_lazy(L));
    lua_pushvalue(L, 2);
    if (lua_isnil(L, 3)) {
        lua_pushlightuserdata(L, (void *)&s_deleted);
    } else {
        lua_pushvalue(L, 3);
    }
    lua_rawset(L, overlay);
    return 0;
}

//  pairs' step: the record's fields in order (as the overlay has them),
//  then the overlay's own. Upvalues: lazy, the next field's index, the
//  overlay key last given (nil: none yet), the lazy table walked.
static int s_step(lua_State *L)
{
    drv_lua_lazy_t *lazy = s_lazy(L);
    const msgpack_object *record = lazy->record;
    lua_rawgeti(L, LUA_REGISTRYINDEX, lazy->table_ref);
    bool current = lua_rawequal(L, -1, lua_upvalueindex(4));
    lua_pop(L, 1);
    if (!record || !current) {
        return luaL_error(L, "%s", s_ended);
    }
    luaL_checkstack(L, 8, "record nested too deep");
    lua_Integer i = lua_tointeger(L, lua_upvalueindex(2));
    while (i < (lua_Integer)record->via.map.size) {
        const msgpack_object_kv *kv = &record->via.map.ptr[i++];
        lua_pushinteger(L, i);
        lua_replace(L, lua_upvalueindex(2));
        if (kv->key.type != MSGPACK_OBJECT_STR) {
            continue;
        }
        lua_pushlstring(L, kv->key.via.str.ptr, kv->key.via.str.size);
        int key = lua_gettop(L);
        if (lua_rawgeti(L, LUA_REGISTRYINDEX, lazy->overlay_ref) == LUA_TTABLE) {
            lua_pushvalue(L, key);
            if (lua_rawget(L, -2) != LUA_TNIL) {
                if (lua_touserdata(L, -1) == &s_deleted) {
                    lua_settop(L, key - 1);
                    continue;
                }
                lua_replace(L, key + 1);
                lua_settop(L, key + 1);
                return 2;
            }
        }
        lua_settop(L, key);
        s_push_field(L, lazy, &kv->val, key);
        return 2;
    }
    if (lua_rawgeti(L, LUA_REGISTRYINDEX, lazy->overlay_ref) != LUA_TTABLE) {
        return 0;
    }
    int overlay = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(3));
    while (lua_next(L, overlay)) {
        bool shown = lua_touserdata(L, -1) != &s_deleted && !s_field(lazy, L, -2);
        if (shown) {
            lua_pushvalue(L, -2);
            lua_replace(L, lua_upvalueindex(3));
            return 2;
        }
        lua_pop(L, 1);
    }
    return 0;
}

//  __pairs(t): a step function of its own, from the first field.
static int s_pairs(lua_State *L)
{
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushinteger(L, 0);
    lua_pushnil(L);
    lua_pushvalue(L, 1);
    lua_pushcclosure(L, s_step, 4);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

static int s_dead(lua_State *L)
{
    return luaL_error(L, "%s", s_ended);
}

//  A metatable (live: the call's lazy table's; else an ended one's): its
//  registry slot.
static int s_metatable(lua_State *L, drv_lua_lazy_t *lazy, bool live)
{
    static const char *const names[] = {"__index", "__newindex", "__pairs"};
    lua_CFunction live_functions[] = {s_index, s_newindex, s_pairs};
    lua_createtable(L, 2, 5);
    for (int i = 0; i < 3; i++) {
        lua_pushlightuserdata(L, lazy);
        lua_pushcclosure(L, live ? live_functions[i] : s_dead, 1);
        lua_setfield(L, -2, names[i]);
    }
    lua_pushliteral(L, "record");
    lua_setfield(L, -2, "__metatable"); // getmetatable(r) says so, and setmetatable(r, ...) is refused
    lua_pushliteral(L, "record");
    lua_setfield(L, -2, "__name");
    lua_pushlightuserdata(L, (void *)(live ? &s_live_tag : &s_dead_tag));
    lua_rawseti(L, -2, 1);
    lua_pushlightuserdata(L, lazy);
    lua_rawseti(L, -2, 2);
    return luaL_ref(L, LUA_REGISTRYINDEX);
}

//  A registry slot holding false (never nil: luaL_ref counts the
//  registry's border, and a nil would let it hand the slot out again).
static int s_slot(lua_State *L)
{
    lua_pushboolean(L, 0);
    return luaL_ref(L, LUA_REGISTRYINDEX);
}

void drv_lua_lazy_setup(lua_State *L, drv_lua_lazy_t *lazy)
{
    lazy->live_ref = s_metatable(L, lazy, true);
    lazy->dead_ref = s_metatable(L, lazy, false);
    lazy->table_ref = s_slot(L);
    lazy->overlay_ref = s_slot(L);
    lazy->record = NULL;
    lazy->seed = (uint64_t)drv_time_mono_us() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)lazy;
}

void drv_lua_lazy_fini(drv_lua_lazy_t *lazy)
{
    free(lazy->slots);
    lazy->slots = NULL;
    lazy->slot_count = 0;
}

void drv_lua_lazy_end(lua_State *L, drv_lua_lazy_t *lazy)
{
    if (lua_rawgeti(L, LUA_REGISTRYINDEX, lazy->table_ref) == LUA_TTABLE) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, lazy->dead_ref);
        lua_setmetatable(L, -2);
        lua_pushboolean(L, 0);
        lua_rawseti(L, LUA_REGISTRYINDEX, lazy->table_ref);
    }
    lua_pop(L, 1);
    lua_pushboolean(L, 0);
    lua_rawseti(L, LUA_REGISTRYINDEX, lazy->overlay_ref);
    lazy->record = NULL;
    lazy->indexed = false;
}

void drv_lua_lazy_push(lua_State *L, drv_lua_lazy_t *lazy, const msgpack_object *record)
{
    if (lazy->record) {
        drv_lua_lazy_end(L, lazy);
    }
    drv_lua_memo_begin(L, lazy->memo);
    lazy->record = record;
    lazy->scanned = 0;
    lazy->indexed = false; // another record, maybe where the last one was
    lua_createtable(L, 0, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, lazy->live_ref);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawseti(L, LUA_REGISTRYINDEX, lazy->table_ref);
}

drv_lua_lazy_t *drv_lua_lazy_parts(lua_State *L, int index)
{
    if (!lua_getmetatable(L, index)) {
        return NULL;
    }
    lua_rawgeti(L, -1, 1);
    const void *tag = lua_touserdata(L, -1);
    lua_rawgeti(L, -2, 2);
    drv_lua_lazy_t *lazy = lua_touserdata(L, -1);
    lua_pop(L, 3);
    if (tag == &s_dead_tag) {
        luaL_error(L, "%s", s_ended);
    }
    if (tag != &s_live_tag) {
        return NULL;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, lazy->overlay_ref);
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        lua_pushnil(L); // nothing set: nil, as the header says
    }
    return lazy;
}

bool drv_lua_lazy_deleted(lua_State *L, int index)
{
    return lua_touserdata(L, index) == &s_deleted;
}
