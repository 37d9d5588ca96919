/*  drv_lua — the sandboxed state behind processor:lua (see the header). */
#include "drv_lua.h"
#include "drv_lua_back.h"
#include "drv_lua_lazy.h"

#include "drover/drv_limits.h"
#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#define PRINTS_PER_SECOND 5
#define PRINT_MAX 500

struct drv_lua_t {
    lua_State *L;
    int function_ref; // the function, in the registry
    int64_t max_instructions;
    size_t max_memory;
    size_t used;    // bytes the allocator handed out
    bool exhausted; // the instruction limit was reached in this call: every
                    // instruction raises until control is back in C
    char name[64];
    int64_t print_second; // rate limit of print
    int prints;
    drv_lua_memo_t memo; // the strings of the record being called
    bool lazy_records;   // record: lazy (drv_lua_lazy.h)
    drv_lua_lazy_t lazy;
};

//  Lua's allocator, refusing what would take the state past its limit:
//  Lua then raises "not enough memory" in the call that asked.
static void *s_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    drv_lua_t *self = ud;
    size_t old = ptr ? osize : 0; // without ptr, osize says what kind of object
    if (nsize == 0) {
        free(ptr);
        self->used -= old;
        return NULL;
    }
    if (nsize > old && self->used + (nsize - old) > self->max_memory) {
        return NULL;
    }
    void *block = realloc(ptr, nsize);
    if (block) {
        self->used = self->used - old + nsize;
    }
    return block;
}

static drv_lua_t *s_owner(lua_State *L)
{
    return *(drv_lua_t **)lua_getextraspace(L);
}

//  The limit cannot be caught: a script's pcall would take the first error
//  and loop on, so from then on the hook fires on every instruction and
//  raises again, until the call unwinds to drv_lua_run's own protected call
//  (C, which runs no instruction) and s_arm resets it for the next record.
static void s_limit_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    drv_lua_t *self = s_owner(L);
    if (!self->exhausted) {
        self->exhausted = true;
        lua_sethook(L, s_limit_hook, LUA_MASKCOUNT, 1);
    }
    luaL_error(L, "instruction limit reached (max_instructions %I)", (lua_Integer)self->max_instructions);
}

static void s_arm(drv_lua_t *self)
{
    self->exhausted = false;
    if (self->max_instructions > 0) {
        lua_sethook(self->L, s_limit_hook, LUA_MASKCOUNT, (int)self->max_instructions); // resets the count
    }
}

//  What copying a returned record may take: what the state has left.
static size_t s_copy_budget(const drv_lua_t *self)
{
    return self->used < self->max_memory ? self->max_memory - self->used : 0;
}

//  print(...): to the instance's log, a few lines a second at most.
static int s_print(lua_State *L)
{
    drv_lua_t *self = s_owner(L);
    int64_t second = drv_time_mono_ms() / 1000;
    if (second != self->print_second) {
        self->print_second = second;
        self->prints = 0;
    }
    if (self->prints++ >= PRINTS_PER_SECOND) {
        return 0;
    }
    char line[PRINT_MAX + 1];
    size_t used = 0;
    int n = lua_gettop(L);
    for (int i = 1; i <= n && used < PRINT_MAX; i++) {
        size_t len;
        const char *text = luaL_tolstring(L, i, &len);
        for (size_t k = 0; k < len && used < PRINT_MAX; k++) {
            char ch = text[k];
            line[used++] = (ch == '"' ? '\'' : (unsigned char)ch < 0x20 ? ' ' : ch);
        }
        if (i < n && used < PRINT_MAX) {
            line[used++] = ' ';
        }
        lua_pop(L, 1);
    }
    line[used] = 0;
    drv_info("lua print node=%s text=\"%s\"", self->name, line);
    return 0;
}

static void s_open_sandbox(lua_State *L)
{
    static const luaL_Reg libs[] = {{LUA_GNAME, luaopen_base},       {LUA_STRLIBNAME, luaopen_string},
                                    {LUA_TABLIBNAME, luaopen_table}, {LUA_MATHLIBNAME, luaopen_math},
                                    {LUA_UTF8LIBNAME, luaopen_utf8}, {NULL, NULL}};
    for (const luaL_Reg *lib = libs; lib->func; lib++) {
        luaL_requiref(L, lib->name, lib->func, 1);
        lua_pop(L, 1);
    }
    //  luaL_requiref kept each library in package.loaded: a table nobody
    //  reaches without the package library, dropped all the same.
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    static const char *const removed[] = {"load", "loadstring", "dofile", "loadfile", "require", NULL};
    for (const char *const *name = removed; *name; name++) {
        lua_pushnil(L);
        lua_setglobal(L, *name);
    }
    lua_pushcfunction(L, s_print);
    lua_setglobal(L, "print");
}

//  "script:3: msg" as "line 3: msg".
static void s_reason(const char *message, char *err, size_t errlen)
{
    if (!message) {
        snprintf(err, errlen, "an error whose value is not a string");
    } else if (strncmp(message, "script:", 7) == 0) {
        snprintf(err, errlen, "line %s", message + 7);
    } else {
        snprintf(err, errlen, "%s", message);
    }
}

static lua_State *s_state(drv_lua_t *self)
{
    lua_State *L = lua_newstate(s_alloc, self);
    if (L) {
        *(drv_lua_t **)lua_getextraspace(L) = self;
    }
    return L;
}

int drv_lua_compile_check(const char *source, size_t length, char *err, size_t errlen)
{
    drv_lua_t checker = {.max_memory = 256 * 1024 * 1024};
    lua_State *L = s_state(&checker);
    if (!L) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = luaL_loadbufferx(L, source, length, "=script", "t");
    if (rc != LUA_OK) {
        s_reason(rc == LUA_ERRMEM ? "the script is too big to compile" : lua_tostring(L, -1), err, errlen);
    }
    lua_close(L);
    return rc == LUA_OK ? 0 : -1;
}

int drv_lua_script_check(void *arg, const char *source, size_t length, char *err, size_t errlen)
{
    (void)arg;
    return drv_lua_compile_check(source, length, err, errlen);
}

int drv_lua_check_stdin(void)
{
    size_t cap = DRV_LIMIT_SCRIPT + 1, length = 0;
    char *text = malloc(cap);
    ssize_t n = 0;
    while (text && length < cap && (n = read(0, text + length, cap - length)) != 0) {
        if (n < 0 && errno != EINTR) {
            free(text);
            return 2;
        }
        length += n > 0 ? (size_t)n : 0;
    }
    if (!text || length > DRV_LIMIT_SCRIPT) {
        printf("the script is larger than %d bytes\n", DRV_LIMIT_SCRIPT);
        free(text);
        return 1;
    }
    char err[400];
    int rc = drv_lua_compile_check(text, length, err, sizeof err);
    free(text);
    if (rc != 0) {
        printf("%s\n", err);
        return 1;
    }
    return 0;
}

//  What the protected call gets: the batch and how far it got.
typedef struct {
    drv_lua_t *self;
    const msgpack_object *records;
    size_t n;
    size_t next; // the record being called
    drv_lua_alloc_fn alloc;
    void *alloc_arg;
    drv_lua_result_fn result;
    void *result_arg;
    char err[300];
} batch_t;

static int s_fail(lua_State *L, batch_t *b)
{
    lua_pushstring(L, b->err);
    return lua_error(L);
}

//  The value at the top of the stack as *count records in *out.
static void s_returned(lua_State *L, batch_t *b, msgpack_object **out, size_t *count)
{
    int result = lua_gettop(L);
    *out = NULL;
    *count = 0;
    if (lua_isnil(L, result)) {
        return;
    }
    if (!lua_istable(L, result)) {
        snprintf(b->err, sizeof b->err, "the function returned a %s; return a table, a list of tables or nil",
                 luaL_typename(L, result));
        s_fail(L, b);
    }
    bool list = lua_rawgeti(L, result, 1) != LUA_TNIL;
    lua_pop(L, 1);
    const drv_lua_memo_t *memo = &b->self->memo;
    size_t budget = s_copy_budget(b->self);
    if (!list) {
        //  A lazy record holds nothing itself: what it is comes of its record.
        bool lazy = b->self->lazy_records && drv_lua_lazy_parts(L, result);
        if (lazy) {
            lua_pop(L, 1);
        } else {
            lua_pushnil(L);
            if (!lua_next(L, result)) {
                return; // {}: nothing
            }
            lua_pop(L, 2);
        }
        *out = b->alloc(b->alloc_arg, sizeof **out);
        if (drv_lua_to_object(L, result, b->alloc, b->alloc_arg, memo, &budget, *out, b->err, sizeof b->err)) {
            s_fail(L, b);
        }
        *count = lazy && (*out)->via.map.size == 0 ? 0 : 1; // every field deleted: nothing, as {} is
        return;
    }
    size_t n = lua_rawlen(L, result);
    if (n * sizeof **out > budget) {
        snprintf(b->err, sizeof b->err, "memory limit reached (max_memory_bytes %zu) copying the returned list",
                 b->self->max_memory);
        s_fail(L, b);
    }
    budget -= n * sizeof **out;
    *out = b->alloc(b->alloc_arg, n * sizeof **out);
    for (size_t i = 0; i < n; i++) {
        if (lua_rawgeti(L, result, (lua_Integer)i + 1) != LUA_TTABLE) {
            snprintf(b->err, sizeof b->err, "item %zu of the returned list is a %s, not a record (a table)", i + 1,
                     luaL_typename(L, -1));
            s_fail(L, b);
        }
        if (drv_lua_to_object(L, -1, b->alloc, b->alloc_arg, memo, &budget, &(*out)[i], b->err, sizeof b->err)) {
            s_fail(L, b);
        }
        if ((*out)[i].type != MSGPACK_OBJECT_MAP) {
            snprintf(b->err, sizeof b->err, "item %zu of the returned list is a list, not a record", i + 1);
            s_fail(L, b);
        }
        lua_pop(L, 1);
    }
    *count = n;
}

//  In a protected call: the records from b->next on, until one fails.
static int s_batch(lua_State *L)
{
    batch_t *b = lua_touserdata(L, 1);
    drv_lua_t *self = b->self;
    while (b->next < b->n) {
        s_arm(self);
        lua_rawgeti(L, LUA_REGISTRYINDEX, self->function_ref);
        if (self->lazy_records) {
            drv_lua_lazy_push(L, &self->lazy, &b->records[b->next]);
        } else {
            drv_lua_push_object(L, &b->records[b->next], &self->memo);
        }
        lua_call(L, 1, 1);
        msgpack_object *out;
        size_t count;
        s_returned(L, b, &out, &count);
        lua_pop(L, 1);
        if (self->lazy_records) {
            drv_lua_lazy_end(L, &self->lazy);
        }
        size_t index = b->next++;
        b->result(b->result_arg, index, out, count, NULL);
    }
    return 0;
}

static void s_error_reason(drv_lua_t *self, int rc, char *err, size_t errlen)
{
    if (rc == LUA_ERRMEM) {
        snprintf(err, errlen, "memory limit reached (max_memory_bytes %zu)", self->max_memory);
    } else if (self->exhausted) {
        //  whatever the script raised last (an error handler's, an error()), the limit ended it
        snprintf(err, errlen, "instruction limit reached (max_instructions %lld)", (long long)self->max_instructions);
    } else {
        s_reason(lua_tostring(self->L, -1), err, errlen);
    }
    lua_pop(self->L, 1);
}

void drv_lua_run(drv_lua_t *self, const msgpack_object *records, size_t n, drv_lua_alloc_fn alloc, void *alloc_arg,
                 drv_lua_result_fn result, void *result_arg)
{
    lua_State *L = self->L;
    batch_t b = {self, records, n, 0, alloc, alloc_arg, result, result_arg, ""};
    while (b.next < n) {
        lua_pushcfunction(L, s_batch);
        lua_pushlightuserdata(L, &b);
        int rc = lua_pcall(L, 1, 0, 0);
        if (rc != LUA_OK) {
            char reason[400];
            s_error_reason(self, rc, reason, sizeof reason);
            if (self->lazy_records) {
                drv_lua_lazy_end(L, &self->lazy); // the failed call's record is no longer readable
            }
            result(result_arg, b.next++, NULL, 0, reason);
        }
    }
}

//  In a protected call: opens the sandbox, runs the script's top level and
//  keeps its function.
static int s_setup(lua_State *L)
{
    const drv_lua_options_t *options = lua_touserdata(L, 1);
    drv_lua_t *self = s_owner(L);
    s_open_sandbox(L);
    drv_lua_record_setup(L);
    if (self->lazy_records) {
        self->lazy.memo = &self->memo;
        drv_lua_lazy_setup(L, &self->lazy);
    }
    if (luaL_loadbufferx(L, options->source, options->length, "=script", "t") != LUA_OK) {
        return lua_error(L);
    }
    lua_call(L, 0, 0);
    if (lua_getglobal(L, options->function) != LUA_TFUNCTION) {
        return luaL_error(L, "the script defines no function %s (it is a %s)", options->function, luaL_typename(L, -1));
    }
    self->function_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

drv_lua_t *drv_lua_new(const drv_lua_options_t *options, char *err, size_t errlen)
{
    drv_lua_t *self = calloc(1, sizeof *self);
    self->max_instructions = options->max_instructions;
    self->max_memory = (size_t)options->max_memory_bytes;
    self->lazy_records = options->lazy_records;
    self->function_ref = LUA_NOREF;
    snprintf(self->name, sizeof self->name, "%s", options->name ? options->name : "lua");
    self->L = s_state(self);
    if (!self->L) {
        snprintf(err, errlen, "cannot make a Lua state within max_memory_bytes %zu", self->max_memory);
        free(self);
        return NULL;
    }
    lua_State *L = self->L;
    lua_pushcfunction(L, s_setup);
    lua_pushlightuserdata(L, (void *)options);
    s_arm(self);
    int rc = lua_pcall(L, 1, 0, 0);
    if (rc != LUA_OK) {
        s_error_reason(self, rc, err, errlen);
        drv_lua_destroy(&self);
        return NULL;
    }
    return self;
}

void drv_lua_destroy(drv_lua_t **self_p)
{
    drv_lua_t *self = *self_p;
    if (self) {
        if (self->L) {
            lua_close(self->L);
        }
        drv_lua_lazy_fini(&self->lazy);
        free(self);
        *self_p = NULL;
    }
}
