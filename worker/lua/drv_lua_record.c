/*  drv_lua_record — records into Lua tables and back (see the header). */
#include "drv_lua_record.h"

#include "drover/drv_utf8.h"

#include <lauxlib.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

//  The registry key of the array metatable: this variable's address.
static const char s_array_key = 0;

void drv_lua_record_setup(lua_State *L)
{
    lua_newtable(L);
    lua_pushliteral(L, "array");
    lua_setfield(L, -2, "__name");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &s_array_key);
}

static void s_push(lua_State *L, const msgpack_object *obj)
{
    luaL_checkstack(L, 4, "record nested too deep");
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
        break;
    case MSGPACK_OBJECT_BIN:
        lua_pushlstring(L, obj->via.bin.ptr, obj->via.bin.size);
        break;
    case MSGPACK_OBJECT_EXT:
        lua_pushlstring(L, obj->via.ext.ptr, obj->via.ext.size);
        break;
    case MSGPACK_OBJECT_ARRAY:
        lua_createtable(L, (int)obj->via.array.size, 0);
        for (uint32_t i = 0; i < obj->via.array.size; i++) {
            s_push(L, &obj->via.array.ptr[i]);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        lua_rawgetp(L, LUA_REGISTRYINDEX, &s_array_key);
        lua_setmetatable(L, -2);
        break;
    case MSGPACK_OBJECT_MAP:
        lua_createtable(L, 0, (int)obj->via.map.size);
        for (uint32_t i = 0; i < obj->via.map.size; i++) {
            s_push(L, &obj->via.map.ptr[i].key);
            s_push(L, &obj->via.map.ptr[i].val);
            lua_rawset(L, -3);
        }
        break;
    default:
        lua_pushnil(L);
        break;
    }
}

void drv_lua_push_object(lua_State *L, const msgpack_object *obj)
{
    s_push(L, obj);
}

typedef struct {
    lua_State *L;
    drv_lua_alloc_fn alloc;
    void *arg;
    char *err;
    size_t errlen;
} convert_t;

static int s_value(convert_t *c, int index, int depth, msgpack_object *out);

//  The table at index is a sequence when it carries the array metatable or
//  its keys are exactly 1..count (count > 0). Sets *count to its entries.
static bool s_is_array(lua_State *L, int index, uint32_t *count)
{
    bool marked = false;
    if (lua_getmetatable(L, index)) {
        lua_rawgetp(L, LUA_REGISTRYINDEX, &s_array_key);
        marked = lua_rawequal(L, -1, -2);
        lua_pop(L, 2);
    }
    uint32_t n = 0;
    bool sequence = true;
    lua_pushnil(L);
    while (lua_next(L, index)) {
        n++;
        lua_pop(L, 1);
        sequence = sequence && lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1;
    }
    *count = n;
    if (marked) {
        *count = (uint32_t)lua_rawlen(L, index);
        return true;
    }
    return sequence && n > 0 && lua_rawlen(L, index) == n;
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
    uint32_t n;
    if (s_is_array(L, index, &n)) {
        out->type = MSGPACK_OBJECT_ARRAY;
        out->via.array.size = n;
        out->via.array.ptr = c->alloc(c->arg, (n ? n : 1) * sizeof(msgpack_object));
        for (uint32_t i = 0; i < n; i++) {
            lua_rawgeti(L, index, (lua_Integer)i + 1);
            int rc = s_value(c, lua_gettop(L), depth + 1, &out->via.array.ptr[i]);
            lua_pop(L, 1);
            if (rc) {
                return -1;
            }
        }
        return 0;
    }
    out->type = MSGPACK_OBJECT_MAP;
    out->via.map.size = n;
    out->via.map.ptr = c->alloc(c->arg, (n ? n : 1) * sizeof(msgpack_object_kv));
    uint32_t i = 0;
    lua_pushnil(L);
    while (lua_next(L, index)) {
        msgpack_object_kv *kv = &out->via.map.ptr[i++];
        int rc = 0;
        if (lua_type(L, -2) != LUA_TSTRING) {
            snprintf(c->err, c->errlen, "a record key must be a string, not a %s (%s)", luaL_typename(L, -2),
                     lua_isinteger(L, -2) ? "a table mixing a list with keys?" : "use tostring()");
            rc = -1;
        } else {
            int top = lua_gettop(L);
            rc = s_value(c, top - 1, depth + 1, &kv->key) || s_value(c, top, depth + 1, &kv->val);
        }
        lua_pop(L, 1);
        if (rc) {
            lua_pop(L, 1);
            return -1;
        }
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
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, index, &len);
        char *copy = c->alloc(c->arg, len ? len : 1);
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
    case LUA_TTABLE:
        return s_table(c, index, depth, out);
    default:
        snprintf(c->err, c->errlen, "a record cannot hold a %s", luaL_typename(L, index));
        return -1;
    }
}

int drv_lua_to_object(lua_State *L, int index, drv_lua_alloc_fn alloc, void *arg, msgpack_object *out, char *err,
                      size_t errlen)
{
    convert_t c = {L, alloc, arg, err, errlen};
    return s_value(&c, lua_absindex(L, index), 0, out);
}
