/*  drv_lua_back — a Lua value back into a record (drv_lua_back.h): tables
    walked, a lazy record (drv_lua_lazy.h) as its record with what the
    script changed. */
#include "drv_lua_back.h"
#include "drv_lua_lazy.h"

#include "drover/drv_utf8.h"

#include <lauxlib.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MAP_ON_STACK 64 // pairs gathered before a map's size is known

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

//  A lazy record (drv_lua_lazy.h): its record's pairs as they came, with
//  the overlay at index applied (a value set replaces the field's, the
//  deleted mark drops it), then the overlay's new fields. Untouched: the
//  record itself.
static int s_lazy(convert_t *c, int overlay, int depth, drv_lua_lazy_t *lazy, msgpack_object *out)
{
    lua_State *L = c->L;
    const msgpack_object *record = lazy->record;
    if (lua_isnil(L, overlay)) {
        *out = *record;
        return 0;
    }
    uint32_t n = record->via.map.size, added = 0;
    lua_pushnil(L);
    while (lua_next(L, overlay)) {
        added++;
        lua_pop(L, 1);
    }
    msgpack_object_kv *kv = s_take(c, ((size_t)n + added + 1) * sizeof *kv);
    bool *gone = kv ? s_take(c, (size_t)n + 1) : NULL;
    if (!gone) {
        return -1;
    }
    memcpy(kv, record->via.map.ptr, n * sizeof *kv);
    memset(gone, 0, n);
    uint32_t count = n;
    lua_pushnil(L);
    while (lua_next(L, overlay)) {
        int key = lua_gettop(L) - 1;
        if (lua_type(L, key) != LUA_TSTRING) {
            snprintf(c->err, c->errlen, "a record key must be a string, not a %s (use tostring())",
                     luaL_typename(L, key));
            lua_pop(L, 2);
            return -1;
        }
        int64_t at = drv_lua_lazy_field(lazy, L, key);
        int rc = 0;
        if (drv_lua_lazy_deleted(L, key + 1)) {
            if (at >= 0) {
                gone[at] = true;
            }
        } else if (at >= 0) {
            gone[at] = false;
            rc = s_value(c, key + 1, depth + 1, &kv[at].val);
        } else {
            rc = s_value(c, key, depth + 1, &kv[count].key) || s_value(c, key + 1, depth + 1, &kv[count].val);
            count++;
        }
        lua_pop(L, 1);
        if (rc) {
            lua_pop(L, 1);
            return -1;
        }
    }
    uint32_t kept = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (i >= n || !gone[i]) {
            kv[kept++] = kv[i];
        }
    }
    out->type = MSGPACK_OBJECT_MAP;
    out->via.map.size = kept;
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
    luaL_checkstack(L, 6, "record nested too deep");
    drv_lua_lazy_t *lazy = drv_lua_lazy_parts(L, index);
    if (lazy) {
        int rc = s_lazy(c, lua_gettop(L), depth, lazy, out);
        lua_pop(L, 1);
        return rc;
    }
    if (drv_lua_marked_array(L, index)) {
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
    const msgpack_object *same = drv_lua_memo_recall(c->memo, s, len);
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
