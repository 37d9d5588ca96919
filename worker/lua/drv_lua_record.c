/*  drv_lua_record — records into Lua tables (see the header); drv_lua_back.c
    brings them back. */
#include "drv_lua_record.h"

#include "drover/drv_keyprint.h"

#include <lauxlib.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

//  The registry keys of the array metatable and of the key cache's strings:
//  these variables' addresses.
static const char s_array_key = 0;
static const char s_keys_key = 0;

void drv_lua_record_setup(lua_State *L)
{
    lua_newtable(L);
    lua_pushliteral(L, "array");
    lua_setfield(L, -2, "__name");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &s_array_key);
    lua_createtable(L, DRV_LUA_KEY_SLOTS, 0);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &s_keys_key);
}

static uint32_t s_slot(const char *text)
{
    uintptr_t p = (uintptr_t)text;
    return (uint32_t)((p >> 4) ^ (p >> 12)) & (DRV_LUA_MEMO_SLOTS - 1);
}

static void s_note(lua_State *L, const msgpack_object *obj, drv_lua_memo_t *memo)
{
    if (!memo || memo->count >= DRV_LUA_MEMO_SLOTS / 2) {
        return; // half full at most: probes stay short
    }
    const char *text = lua_tostring(L, -1);
    uint32_t i = s_slot(text);
    while (memo->slot[i].stamp == memo->stamp && memo->slot[i].text != text) {
        i = (i + 1) & (DRV_LUA_MEMO_SLOTS - 1);
    }
    memo->slot[i].text = text;
    memo->slot[i].obj = obj;
    memo->slot[i].stamp = memo->stamp;
    memo->count++;
}

const msgpack_object *drv_lua_memo_recall(const drv_lua_memo_t *memo, const char *text, size_t len)
{
    if (!memo) {
        return NULL;
    }
    for (uint32_t i = s_slot(text); memo->slot[i].stamp == memo->stamp; i = (i + 1) & (DRV_LUA_MEMO_SLOTS - 1)) {
        if (memo->slot[i].text == text) {
            const msgpack_object *obj = memo->slot[i].obj;
            const char *bytes = obj->type == MSGPACK_OBJECT_STR ? obj->via.str.ptr : obj->via.bin.ptr;
            uint32_t size = obj->type == MSGPACK_OBJECT_STR ? obj->via.str.size : obj->via.bin.size;
            return size == len && memcmp(bytes, text, len) == 0 ? obj : NULL;
        }
    }
    return NULL;
}

//  Where a key's bytes would be in the key cache (Lua's own hash reads
//  every byte, and then walks its string table: most of what building a
//  table took).
static uint32_t s_key_slot(const char *bytes, uint32_t len)
{
    return (uint32_t)(drv_keyprint(bytes, len) >> 56) & (DRV_LUA_KEY_SLOTS - 1);
}

static void s_push(lua_State *L, const msgpack_object *obj, drv_lua_memo_t *memo);

//  Pushes a map's key, from the key cache when the same bytes were a key
//  before: records repeat their keys, and a cached key costs a hash of 16
//  bytes, a compare and an array read instead of Lua's interning.
static void s_push_key(lua_State *L, const msgpack_object *key, drv_lua_memo_t *memo)
{
    const char *bytes = key->via.str.ptr;
    uint32_t len = key->via.str.size;
    if (!memo || key->type != MSGPACK_OBJECT_STR || len > DRV_LUA_KEY_MAX || len == 0) {
        s_push(L, key, memo);
        return;
    }
    uint32_t slot = s_key_slot(bytes, len);
    if (memo->keys[slot].len == len && memcmp(memo->keys[slot].text, bytes, len) == 0) {
        lua_rawgeti(L, memo->keys_index, (lua_Integer)slot + 1);
    } else {
        lua_pushlstring(L, bytes, len);
        lua_pushvalue(L, -1);
        lua_rawseti(L, memo->keys_index, (lua_Integer)slot + 1); // the cache holds it: its bytes stay put
        memo->keys[slot].text = lua_tostring(L, -1);
        memo->keys[slot].len = len;
    }
    s_note(L, key, memo);
}

static void s_push(lua_State *L, const msgpack_object *obj, drv_lua_memo_t *memo)
{
    switch (obj->type) {
    case MSGPACK_OBJECT_BOOLEAN:
        lua_pushboolean(L, obj->via.boolean);
        break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        //  Above INT64_MAX: Lua has no unsigned integers; the bits are kept
        //  and come back as a negative integer, as Lua's own integers wrap.
        lua_pushinteger(L, (lua_Integer)obj->via.u64);
        break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        lua_pushinteger(L, (lua_Integer)obj->via.i64);
        break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        lua_pushnumber(L, obj->via.f64);
        break;
    case MSGPACK_OBJECT_STR:
        lua_pushlstring(L, obj->via.str.ptr, obj->via.str.size);
        s_note(L, obj, memo);
        break;
    case MSGPACK_OBJECT_BIN:
        lua_pushlstring(L, obj->via.bin.ptr, obj->via.bin.size);
        s_note(L, obj, memo);
        break;
    case MSGPACK_OBJECT_EXT:
        lua_pushlstring(L, obj->via.ext.ptr, obj->via.ext.size);
        break;
    case MSGPACK_OBJECT_ARRAY:
        luaL_checkstack(L, 4, "record nested too deep"); // a table, a key and a value per level
        lua_createtable(L, (int)obj->via.array.size, 0);
        for (uint32_t i = 0; i < obj->via.array.size; i++) {
            s_push(L, &obj->via.array.ptr[i], memo);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        lua_rawgetp(L, LUA_REGISTRYINDEX, &s_array_key);
        lua_setmetatable(L, -2);
        break;
    case MSGPACK_OBJECT_MAP:
        luaL_checkstack(L, 4, "record nested too deep");
        lua_createtable(L, 0, (int)obj->via.map.size + 4); // room for a few new keys without a rehash
        for (uint32_t i = 0; i < obj->via.map.size; i++) {
            s_push_key(L, &obj->via.map.ptr[i].key, memo);
            s_push(L, &obj->via.map.ptr[i].val, memo);
            lua_rawset(L, -3);
        }
        break;
    default:
        lua_pushnil(L);
        break;
    }
}

bool drv_lua_marked_array(lua_State *L, int index)
{
    bool marked = false;
    if (lua_getmetatable(L, index)) {
        lua_rawgetp(L, LUA_REGISTRYINDEX, &s_array_key);
        marked = lua_rawequal(L, -1, -2);
        lua_pop(L, 2);
    }
    return marked;
}

void drv_lua_memo_begin(lua_State *L, drv_lua_memo_t *memo)
{
    if (++memo->stamp == 0) { // wrapped: no slot may look current
        memset(memo->slot, 0, sizeof memo->slot);
        memo->stamp = 1;
    }
    memo->count = 0;
    if (memo->state != L) { // its cached keys are another state's strings
        memset(memo->keys, 0, sizeof memo->keys);
        memo->state = L;
    }
}

void drv_lua_push_more(lua_State *L, const msgpack_object *obj, drv_lua_memo_t *memo)
{
    if (memo) {
        lua_rawgetp(L, LUA_REGISTRYINDEX, &s_keys_key);
        memo->keys_index = lua_gettop(L);
        s_push(L, obj, memo);
        lua_remove(L, memo->keys_index);
        return;
    }
    s_push(L, obj, memo);
}

void drv_lua_push_object(lua_State *L, const msgpack_object *obj, drv_lua_memo_t *memo)
{
    if (memo) {
        drv_lua_memo_begin(L, memo);
    }
    drv_lua_push_more(L, obj, memo);
}
