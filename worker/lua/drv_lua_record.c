/*  drv_lua_record — records into Lua tables and back (see the header). */
#include "drv_lua_record.h"

#include "drover/drv_keyprint.h"
#include "drover/drv_utf8.h"

#include <lauxlib.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MAP_ON_STACK 64 // pairs gathered before a map's size is known

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

static const msgpack_object *s_recall(const drv_lua_memo_t *memo, const char *text, size_t len)
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

void drv_lua_push_object(lua_State *L, const msgpack_object *obj, drv_lua_memo_t *memo)
{
    if (memo) {
        if (++memo->stamp == 0) { // wrapped: no slot may look current
            memset(memo->slot, 0, sizeof memo->slot);
            memo->stamp = 1;
        }
        memo->count = 0;
        if (memo->state != L) { // its cached keys are another state's strings
            memset(memo->keys, 0, sizeof memo->keys);
            memo->state = L;
        }
        lua_rawgetp(L, LUA_REGISTRYINDEX, &s_keys_key);
        memo->keys_index = lua_gettop(L);
        s_push(L, obj, memo);
        lua_remove(L, memo->keys_index);
        return;
    }
    s_push(L, obj, memo);
}

typedef struct {
    lua_State *L;
    drv_lua_alloc_fn alloc;
    void *arg;
    const drv_lua_memo_t *memo;
    size_t budget; // bytes the copy may still take
    char *err;
    size_t errlen;
} convert_t;

static int s_value(convert_t *c, int index, int depth, msgpack_object *out);

//  Memory for the copy, charged to its budget: a table referenced many times
//  (t = {a = t0, b = t0}, nested) is copied once per reference, so the copy
//  can be exponentially larger than what the Lua state holds. NULL with the
//  reason in err once the budget is spent.
static void *s_take(convert_t *c, size_t bytes)
{
    if (bytes > c->budget) {
        snprintf(c->err, c->errlen,
                 "memory limit reached (max_memory_bytes) copying the returned record: it would take more than "
                 "the limit (a table referenced many times is copied once per reference)");
        c->budget = 0;
        return NULL;
    }
    c->budget -= bytes;
    return c->alloc(c->arg, bytes);
}

static bool s_marked_array(lua_State *L, int index)
{
    bool marked = false;
    if (lua_getmetatable(L, index)) {
        lua_rawgetp(L, LUA_REGISTRYINDEX, &s_array_key);
        marked = lua_rawequal(L, -1, -2);
        lua_pop(L, 2);
    }
    return marked;
}

//  A table without the array mark whose keys are exactly 1..n (n > 0).
static bool s_is_sequence(lua_State *L, int index, uint32_t *count)
{
    uint32_t n = 0;
    bool sequence = true;
    lua_pushnil(L);
    while (lua_next(L, index)) {
        n++;
        lua_pop(L, 1);
        sequence = sequence && lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1;
    }
    *count = n;
    return sequence && n > 0 && lua_rawlen(L, index) == n;
}

static int s_array(convert_t *c, int index, int depth, uint32_t n, msgpack_object *out)
{
    out->type = MSGPACK_OBJECT_ARRAY;
    out->via.array.size = n;
    out->via.array.ptr = s_take(c, (n ? n : 1) * sizeof(msgpack_object));
    if (!out->via.array.ptr) {
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        lua_rawgeti(c->L, index, (lua_Integer)i + 1);
        int rc = s_value(c, lua_gettop(c->L), depth + 1, &out->via.array.ptr[i]);
        lua_pop(c->L, 1);
        if (rc) {
            return -1;
        }
    }
    return 0;
}

//  A map in one walk: pairs gather on the C stack until the count is known.
static int s_map(convert_t *c, int index, int depth, msgpack_object *out)
{
    lua_State *L = c->L;
    msgpack_object_kv local[MAP_ON_STACK];
    msgpack_object_kv *kv = local;
    uint32_t n = 0, capacity = MAP_ON_STACK;
    lua_pushnil(L);
    while (lua_next(L, index)) {
        if (n == capacity) {
            msgpack_object_kv *grown = s_take(c, 2 * capacity * sizeof *grown);
            if (!grown) {
                lua_pop(L, 2);
                return -1;
            }
            memcpy(grown, kv, n * sizeof *kv);
            kv = grown;
            capacity *= 2;
        }
        int rc;
        if (lua_type(L, -2) != LUA_TSTRING) {
            snprintf(c->err, c->errlen, "a record key must be a string, not a %s (%s)", luaL_typename(L, -2),
                     lua_isinteger(L, -2) ? "a table mixing a list with keys?" : "use tostring()");
            rc = -1;
        } else {
            int top = lua_gettop(L);
            rc = s_value(c, top - 1, depth + 1, &kv[n].key) || s_value(c, top, depth + 1, &kv[n].val);
        }
        lua_pop(L, 1);
        if (rc) {
            lua_pop(L, 1);
            return -1;
        }
        n++;
    }
    out->type = MSGPACK_OBJECT_MAP;
    out->via.map.size = n;
    if (kv == local) {
        kv = s_take(c, (n ? n : 1) * sizeof *kv);
        if (!kv) {
            return -1;
        }
        memcpy(kv, local, n * sizeof *kv);
    }
    out->via.map.ptr = kv;
    return 0;
}

static int s_table(convert_t *c, int index, int depth, msgpack_object *out)
{
    lua_State *L = c->L;
    if (depth >= DRV_LUA_RECORD_MAX_DEPTH) {
        snprintf(c->err, c->errlen, "tables nested deeper than %d (a table that contains itself?)",
                 DRV_LUA_RECORD_MAX_DEPTH);
        return -1;
    }
    luaL_checkstack(L, 4, "record nested too deep");
    if (s_marked_array(L, index)) {
        return s_array(c, index, depth, (uint32_t)lua_rawlen(L, index), out);
    }
    //  Records are maps: a table whose first key is a string is one, and
    //  only a table starting with an integer key may be a sequence.
    lua_pushnil(L);
    bool map = true;
    if (lua_next(L, index)) {
        map = lua_type(L, -2) == LUA_TSTRING;
        lua_pop(L, 2);
    }
    uint32_t n;
    if (!map && s_is_sequence(L, index, &n)) {
        return s_array(c, index, depth, n, out);
    }
    return s_map(c, index, depth, out);
}

static int s_string(convert_t *c, int index, msgpack_object *out)
{
    size_t len;
    const char *s = lua_tolstring(c->L, index, &len);
    const msgpack_object *same = s_recall(c->memo, s, len);
    if (same) {
        *out = *same;
        return 0;
    }
    char *copy = s_take(c, len ? len : 1);
    if (!copy) {
        return -1;
    }
    memcpy(copy, s, len);
    if (drv_utf8_valid(s, len, true)) {
        out->type = MSGPACK_OBJECT_STR;
        out->via.str.ptr = copy;
        out->via.str.size = (uint32_t)len;
    } else {
        out->type = MSGPACK_OBJECT_BIN;
        out->via.bin.ptr = copy;
        out->via.bin.size = (uint32_t)len;
    }
    return 0;
}

static int s_value(convert_t *c, int index, int depth, msgpack_object *out)
{
    lua_State *L = c->L;
    switch (lua_type(L, index)) {
    case LUA_TNIL:
        out->type = MSGPACK_OBJECT_NIL;
        return 0;
    case LUA_TBOOLEAN:
        out->type = MSGPACK_OBJECT_BOOLEAN;
        out->via.boolean = lua_toboolean(L, index);
        return 0;
    case LUA_TNUMBER:
        if (lua_isinteger(L, index)) {
            int64_t v = lua_tointeger(L, index);
            out->type = v < 0 ? MSGPACK_OBJECT_NEGATIVE_INTEGER : MSGPACK_OBJECT_POSITIVE_INTEGER;
            out->via.i64 = v;
        } else {
            out->type = MSGPACK_OBJECT_FLOAT64;
            out->via.f64 = lua_tonumber(L, index);
        }
        return 0;
    case LUA_TSTRING:
        return s_string(c, index, out);
    case LUA_TTABLE:
        return s_table(c, index, depth, out);
    default:
        snprintf(c->err, c->errlen, "a record cannot hold a %s", luaL_typename(L, index));
        return -1;
    }
}

int drv_lua_to_object(lua_State *L, int index, drv_lua_alloc_fn alloc, void *arg, const drv_lua_memo_t *memo,
                      size_t *budget, msgpack_object *out, char *err, size_t errlen)
{
    convert_t c = {L, alloc, arg, memo, *budget, err, errlen};
    int rc = s_value(&c, lua_absindex(L, index), 0, out);
    *budget = c.budget;
    return rc;
}
