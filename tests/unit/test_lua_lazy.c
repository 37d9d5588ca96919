/*  processor:lua's lazy records (worker/lua/drv_lua_lazy.h): every script
    here gives the same records with record: lazy as with tables (reads,
    sets, renames, deletes, pairs, nested tables, lists, records inside
    other tables, nil and {}), and what is lazy's own holds: next, rawget
    and # see nothing, the metatable is protected, an untouched record goes
    back as it came, one whose fields were all deleted is dropped, and a
    record or its pairs kept past its call raise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "drv_lua.h"

#include "drover/drv_mpjson.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static msgpack_zone s_zone;

static void *s_alloc(void *arg, size_t size)
{
    (void)arg;
    return msgpack_zone_malloc(&s_zone, size);
}

typedef struct {
    json_t *out; // per record: the list of records it gave, or {"error": why}
    const msgpack_object *in;
    bool shared; // the first record came back as the very record given
} collected_t;

static json_t *s_json(const msgpack_object *obj)
{
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
    msgpack_pack_object(&pk, *obj);
    char err[200];
    json_t *value = drv_mpjson_decode(buf.data, buf.size, err, sizeof err);
    msgpack_sbuffer_destroy(&buf);
    assert_non_null(value);
    return value;
}

static void s_result(void *arg, size_t index, const msgpack_object *out, size_t count, const char *error)
{
    collected_t *c = arg;
    if (error) {
        json_array_append_new(c->out, json_pack("{s:s}", "error", error));
        return;
    }
    json_t *list = json_array();
    for (size_t i = 0; i < count; i++) {
        json_array_append_new(list, s_json(&out[i]));
    }
    json_array_append_new(c->out, list);
    if (index == 0 && count == 1 && out[0].type == MSGPACK_OBJECT_MAP && out[0].via.map.ptr == c->in[0].via.map.ptr) {
        c->shared = true;
    }
}

//  What script makes of records (a JSON array of objects).
static json_t *s_run(const char *script, const char *records, bool lazy, bool *shared)
{
    json_error_t jerr;
    json_t *in = json_loads(records, 0, &jerr);
    assert_non_null(in);
    msgpack_zone_init(&s_zone, 4096);
    size_t n = json_array_size(in);
    msgpack_object *objects = msgpack_zone_malloc(&s_zone, n * sizeof *objects);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(drv_mpjson_object(json_array_get(in, i), &s_zone, 32, &objects[i]), 0);
    }
    drv_lua_options_t options = {.source = script,
                                 .length = strlen(script),
                                 .function = "process",
                                 .max_instructions = 1000000,
                                 .max_memory_bytes = 64 << 20,
                                 .name = "test",
                                 .lazy_records = lazy};
    char err[300];
    drv_lua_t *lua = drv_lua_new(&options, err, sizeof err);
    assert_non_null(lua);
    collected_t c = {json_array(), objects, false};
    drv_lua_run(lua, objects, n, s_alloc, NULL, s_result, &c);
    drv_lua_destroy(&lua);
    msgpack_zone_destroy(&s_zone);
    json_decref(in);
    if (shared) {
        *shared = c.shared;
    }
    return c.out;
}

static const char *s_records = "[{\"message\": \"GET / 200\", \"host\": \"web-1\", \"status\": 200, \"attributes\": "
                               "{\"k\": \"v\", \"n\": 1}, \"tags\": [\"a\", \"b\"], \"time\": 1763900000123456789},"
                               " {\"message\": \"POST /x 500\", \"status\": 500, \"attributes\": {}}]";

static void test_every_script_gives_what_tables_give(void **state)
{
    (void)state;
    static const char *const scripts[] = {
        "function process(r) r.env = 'prod'; r.msg = r.message; r.message = nil; return r end",
        "function process(r) return r end",
        "function process(r) if r.status >= 500 then return nil end return r end",
        "function process(r) r.attributes.k2 = r.host or 'none'; r.attributes.n = nil; return r end",
        "function process(r) table.insert(r.tags or {}, 'c'); r.tags2 = r.tags; return r end",
        "function process(r) local keys = {} for k, v in pairs(r) do keys[#keys + 1] = k .. '=' .. type(v) end "
        "table.sort(keys) return {keys = table.concat(keys, ',')} end",
        "function process(r) r.host = nil; r.added = 1; local keys = {} for k in pairs(r) do keys[#keys + 1] = k end "
        "table.sort(keys) r.keys = table.concat(keys, ',') return r end",
        "function process(r) return {r, {copy = r.message}} end",
        "function process(r) return {orig = r, n = r.status} end",
        "function process(r) r.message = r.message .. '!'; r.time = r.time + 1; return r end",
        "function process(r) return {} end",
        "function process(r) r.status = 'x'; r.status = nil; r.gone = 1; r.gone = nil; return r end",
        "function process(r) for k, v in pairs(r) do if type(v) == 'table' then v.seen = true end end return r end",
    };
    for (size_t i = 0; i < sizeof scripts / sizeof *scripts; i++) {
        json_t *tables = s_run(scripts[i], s_records, false, NULL);
        json_t *lazy = s_run(scripts[i], s_records, true, NULL);
        if (!json_equal(tables, lazy)) {
            char *a = json_dumps(tables, JSON_SORT_KEYS), *b = json_dumps(lazy, JSON_SORT_KEYS);
            fail_msg("script %zu:\n%s\ntables: %s\nlazy:   %s", i, scripts[i], a, b);
        }
        json_decref(tables);
        json_decref(lazy);
    }
}

static void test_what_is_lazys_own(void **state)
{
    (void)state;
    bool shared = false;
    json_t *out = s_run("function process(r) return r end", s_records, true, &shared);
    assert_true(shared); // untouched: the record as it came, not a copy
    json_decref(out);
    out = s_run("function process(r) local _ = r.message; return r end", s_records, true, &shared);
    assert_true(shared); // read only: the same
    json_decref(out);
    out = s_run("function process(r) local ok, why = pcall(setmetatable, r, {}) "
                "return {t = type(r), n = tostring(next(r)), g = tostring(rawget(r, 'message')), l = #r, "
                "m = getmetatable(r), why = why, read = r.message} end",
                "[{\"message\": \"m\"}]", true, NULL);
    json_t *want = json_loads("[[{\"t\": \"table\", \"n\": \"nil\", \"g\": \"nil\", \"l\": 0, \"m\": \"record\", "
                              "\"why\": \"cannot change a protected metatable\", \"read\": \"m\"}]]",
                              0, NULL);
    if (!json_equal(out, want)) {
        fail_msg("%s", json_dumps(out, JSON_SORT_KEYS));
    }
    json_decref(want);
    json_decref(out);
    //  A key that is not a string is named (tables fail too, as a list item that is not a record).
    out = s_run("function process(r) r[1] = 'x'; return r end", s_records, true, NULL);
    const char *error = json_string_value(json_object_get(json_array_get(out, 0), "error"));
    assert_non_null(error);
    assert_non_null(strstr(error, "a record key must be a string, not a number"));
    json_decref(out);
    //  Every field deleted: nothing, as {} is.
    out = s_run("function process(r) for k in pairs(r) do r[k] = nil end return r end", s_records, true, NULL);
    json_t *dropped = json_loads("[[], []]", 0, NULL);
    assert_true(json_equal(out, dropped));
    json_decref(dropped);
    json_decref(out);
}

static void test_a_record_kept_past_its_call_raises(void **state)
{
    (void)state;
    static const char *const scripts[] = {
        "function process(r) if last then r.prev = last.message end last = r return r end",
        "function process(r) if last then last.x = 1 end last = r return r end",
        "function process(r) if last then return last end last = r return r end",
        "function process(r) if step then step() end step = pairs(r) return r end",
    };
    for (size_t i = 0; i < sizeof scripts / sizeof *scripts; i++) {
        json_t *out = s_run(scripts[i], s_records, true, NULL);
        const char *error = json_string_value(json_object_get(json_array_get(out, 1), "error"));
        if (!error || !strstr(error, "usable only in the call it was given to")) {
            char *text = json_dumps(out, 0);
            fail_msg("script %zu: %s", i, text);
        }
        assert_true(json_is_array(json_array_get(out, 0))); // the first call was fine
        json_decref(out);
    }
}

//  A record of many fields whose script sets every one and adds as many:
//  each field set is found in the record again on the way back, which a
//  scan per field would make quadratic (a hostile record's size times the
//  script's writes); the same records as with tables.
static void test_a_wide_record_rewritten_whole_gives_what_tables_give(void **state)
{
    (void)state;
    enum { FIELDS = 4000 }; // past the index's threshold at once; more only slows valgrind
    json_t *record = json_object();
    for (int i = 0; i < FIELDS; i++) {
        char key[64];
        snprintf(key, sizeof key, "attribute.with.a.long.prefix.%05d", i);
        json_object_set_new(record, key, json_integer(i));
    }
    json_t *batch = json_pack("[o]", record);
    char *records = json_dumps(batch, JSON_COMPACT);
    json_decref(batch);
    const char *script = "function process(r) local keys = {} for k in pairs(r) do keys[#keys + 1] = k end "
                         "for _, k in ipairs(keys) do r[k] = r[k] + 1; r[k .. '.copy'] = r[k] end return r end";
    json_t *tables = s_run(script, records, false, NULL);
    json_t *lazy = s_run(script, records, true, NULL);
    if (json_object_size(json_array_get(json_array_get(lazy, 0), 0)) != 2 * FIELDS) {
        fail_msg("%.300s", json_dumps(lazy, 0));
    }
    assert_true(json_equal(tables, lazy));
    json_decref(tables);
    json_decref(lazy);
    free(records);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_script_gives_what_tables_give),
        cmocka_unit_test(test_what_is_lazys_own),
        cmocka_unit_test(test_a_record_kept_past_its_call_raises),
        cmocka_unit_test(test_a_wide_record_rewritten_whole_gives_what_tables_give),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
