/*  drover-bench node-loop KIND SECONDS — benchmark B13's measurement: one
    instance's DAG (receiver:zmq -> KIND -> exporter:null) built in this
    process and fed the same 64-record batch over and over, no sockets:
    records/s through one processor on one core (pin it with taskset).
    KIND: transform (set one field, rename one) or lua (a script doing the
    same), or none (the DAG alone); lua-lazy: lua with record: lazy; a
    -wide suffix (lua-wide, lua-lazy-wide, transform-wide, none-wide):
    records of 40 fields instead of 7, the same three touched. B35's (docs/ottl.md): ottl (four OTTL
    statements: a set with a where on a resource attribute, a
    replace_pattern, a delete_key, a keep_keys), ottl-lua (a script doing
    the same; ottl-lua-lazy with record: lazy), ottl-old (the old set and delete doing the part they can),
    ottl-none (the DAG alone), on records with attributes and a resource.

    drover-bench lua-split SECONDS — where a record's time goes in
    processor:lua: building its table, the call, turning the result back
    into a record; each step timed over the same records. */
#include "drv_bench.h"

#include "drv_dag.h"
#include "drv_nodes.h"
#include "drv_schemas.h"
#include "drv_lua.h"
#include "drv_lua_back.h"
#include "drv_node.h"

#include "drover/drv_cpus.h"
#include "drover/drv_problems.h"
#include "drover/drv_spec.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 64

static const char *s_script = "function process(r) r.env = 'prod'; r.msg = r.message; r.message = nil; return r end";

static const char *const s_statements[] = {
    "set(attributes[\"env\"], \"prod\") where resource.attributes[\"k8s.namespace.name\"] == \"shop\"",
    "replace_pattern(body, \"token=[A-Za-z0-9]+\", \"token=***\")", "delete_key(attributes, \"password\")",
    "keep_keys(attributes, [\"http.method\", \"http.route\", \"env\"])"};

static const char *s_ottl_script =
    "local keep = {['http.method'] = true, ['http.route'] = true, env = true}\n"
    "function process(r)\n"
    "  if r.resource and r.resource['k8s.namespace.name'] == 'shop' then r.attributes.env = 'prod' end\n"
    "  r.body = string.gsub(r.body, 'token=[A-Za-z0-9]+', 'token=***')\n"
    "  r.attributes.password = nil\n"
    "  for k in pairs(r.attributes) do if not keep[k] then r.attributes[k] = nil end end\n"
    "  return r\n"
    "end";

static void s_pack_str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str_with_body(pk, s, strlen(s));
}

//  A log record as receiver:otlp makes them: body, attributes, resource.
static void s_pack_rich(msgpack_sbuffer *buf)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, buf, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, BATCH);
    for (int i = 0; i < BATCH; i++) {
        msgpack_pack_map(&pk, 6);
        s_pack_str(&pk, "signal");
        s_pack_str(&pk, "log");
        s_pack_str(&pk, "time_unix_nano");
        msgpack_pack_uint64(&pk, 1763900000123456789ull + (uint64_t)i);
        s_pack_str(&pk, "severity_number");
        msgpack_pack_int(&pk, 9);
        s_pack_str(&pk, "body");
        s_pack_str(&pk, i % 2 ? "GET /api/v1/items?token=Zx81abc 200 12ms" : "GET /api/v1/items 200 12ms");
        s_pack_str(&pk, "attributes");
        msgpack_pack_map(&pk, 5);
        const char *attrs[] = {"http.method", "GET",       "http.route", "/api/v1/items", "password",
                               "hunter2",     "tmp.trace", "x1",         "user.agent",    "curl/7.88"};
        for (int a = 0; a < 10; a++) {
            s_pack_str(&pk, attrs[a]);
        }
        s_pack_str(&pk, "resource");
        msgpack_pack_map(&pk, 2);
        s_pack_str(&pk, "service.name");
        s_pack_str(&pk, "checkout");
        s_pack_str(&pk, "k8s.namespace.name");
        s_pack_str(&pk, i % 4 ? "shop" : "ops");
    }
}

#define WIDE_EXTRA 33 // fields a wide record has beside the typical one's 7 (an enriched Kubernetes log's)

//  A typical log record, BATCH of them as one producer message; wide, with
//  WIDE_EXTRA more string fields (k8s.pod.name, labels, ...) after them.
static void s_pack_batch(msgpack_sbuffer *buf, bool wide)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, buf, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, BATCH);
    for (int i = 0; i < BATCH; i++) {
        msgpack_pack_map(&pk, 7 + (wide ? WIDE_EXTRA : 0));
        for (int f = 0; wide && f < WIDE_EXTRA; f++) {
            char key[40], value[40];
            snprintf(key, sizeof key, "k8s.pod.labels.label-%02d", f);
            snprintf(value, sizeof value, "value-%02d-of-pod-%d", f, i);
            s_pack_str(&pk, key);
            s_pack_str(&pk, value);
        }
        msgpack_pack_str_with_body(&pk, "time_unix_nano", 14);
        msgpack_pack_uint64(&pk, 1763900000123456789ull + (uint64_t)i);
        msgpack_pack_str_with_body(&pk, "severity_text", 13);
        msgpack_pack_str_with_body(&pk, "INFO", 4);
        msgpack_pack_str_with_body(&pk, "message", 7);
        msgpack_pack_str_with_body(&pk, "GET /api/v1/items 200 12ms", 26);
        msgpack_pack_str_with_body(&pk, "host", 4);
        msgpack_pack_str_with_body(&pk, "web-1", 5);
        msgpack_pack_str_with_body(&pk, "service", 7);
        msgpack_pack_str_with_body(&pk, "checkout", 8);
        msgpack_pack_str_with_body(&pk, "status", 6);
        msgpack_pack_int(&pk, 200);
        msgpack_pack_str_with_body(&pk, "duration_ms", 11);
        msgpack_pack_double(&pk, 12.5);
    }
}

static json_t *s_spec(const char *kind)
{
    json_t *processor;
    if (!strncmp(kind, "transform", 9)) {
        processor = json_pack("{s:s, s:{s:{s:s}, s:{s:s}}, s:[s]}", "type", "processor:transform", "config", "set",
                              "env", "prod", "rename", "message", "msg", "to", "out");
    } else if (!strncmp(kind, "lua", 3)) {
        processor = json_pack("{s:s, s:{s:s, s:s}, s:[s]}", "type", "processor:lua", "config", "script", s_script,
                              "record", strstr(kind, "-lazy") ? "lazy" : "table", "to", "out");
    } else if (!strcmp(kind, "ottl")) {
        processor = json_pack("{s:s, s:{s:[s,s,s,s]}, s:[s]}", "type", "processor:transform", "config", "statements",
                              s_statements[0], s_statements[1], s_statements[2], s_statements[3], "to", "out");
    } else if (!strncmp(kind, "ottl-lua", 8)) {
        processor = json_pack("{s:s, s:{s:s, s:s}, s:[s]}", "type", "processor:lua", "config", "script", s_ottl_script,
                              "record", strstr(kind, "-lazy") ? "lazy" : "table", "to", "out");
    } else if (!strcmp(kind, "ottl-old")) {
        processor = json_pack("{s:s, s:{s:{s:s}, s:[s,s,s]}, s:[s]}", "type", "processor:transform", "config", "set",
                              "attributes[\"env\"]", "prod", "delete", "attributes[\"password\"]",
                              "attributes[\"tmp.trace\"]", "attributes[\"user.agent\"]", "to", "out");
    } else {
        processor = json_pack("{s:s, s:{}, s:[s]}", "type", "processor:transform", "config", "to", "out");
    }
    json_t *raw = json_pack("{s:{s:i}, s:{s:{s:s, s:{s:s}, s:[s]}, s:o, s:{s:s}}}", "cores", "count", 1, "nodes", "in",
                            "type", "receiver:zmq", "config", "endpoint", "tcp://127.0.0.1:1", "to", "p", "p",
                            processor, "out", "type", "exporter:null");
    drv_cpus_t cpus;
    drv_cpus_allowed(&cpus);
    drv_spec_env_t env = {.cpus = &cpus};
    drv_problems_t *problems = drv_problems_new();
    json_t *spec = drv_spec_normalize(raw, &env, "", problems);
    if (!spec) {
        fprintf(stderr, "spec: %s: %s\n", drv_problems_path(problems, 0), drv_problems_message(problems, 0));
    }
    drv_problems_destroy(&problems);
    json_decref(raw);
    return spec;
}

int drv_bench_node_loop(const char *kind, double seconds)
{
    drv_schemas_register();
    drv_spec_set_script_check(drv_lua_script_check, NULL);
    json_t *spec = s_spec(kind);
    char err[300];
    drv_dag_identity_t who = {"bench", "bench", 1, 0, NULL, 1, NULL};
    drv_dag_t *dag = spec ? drv_dag_new(spec, &who, drv_nodes_kinds(), err, sizeof err) : NULL;
    if (!dag) {
        fprintf(stderr, "cannot build the DAG: %s\n", spec ? err : "bad spec");
        return 1;
    }
    msgpack_sbuffer batch;
    msgpack_sbuffer_init(&batch);
    if (!strncmp(kind, "ottl", 4)) {
        s_pack_rich(&batch);
    } else {
        s_pack_batch(&batch, strstr(kind, "-wide") != NULL);
    }
    double start = drv_bench_now(), end = start + seconds;
    long records = 0;
    while (drv_bench_now() < end) {
        for (int i = 0; i < 64; i++) {
            records += drv_dag_ingest(dag, "in", batch.data, batch.size, err, sizeof err);
        }
    }
    double elapsed = drv_bench_now() - start;
    int64_t in, out, errors;
    drv_dag_counters(dag, &in, &out, &errors);
    printf("kind=%s records_per_sec=%.0f ns_per_record=%.1f errors=%lld\n", kind, records / elapsed,
           elapsed / (double)records * 1e9, (long long)errors);
    drv_dag_destroy(&dag);
    json_decref(spec);
    msgpack_sbuffer_destroy(&batch);
    return errors ? 1 : 0;
}

//  ---------------------------------------------------------------- the split

static char s_arena[1 << 20];
static size_t s_used;

static void *s_bump(void *arg, size_t size)
{
    (void)arg;
    size = (size + 15) & ~(size_t)15;
    if (s_used + size > sizeof s_arena) {
        s_used = 0;
    }
    void *p = s_arena + s_used;
    s_used += size;
    return p;
}

typedef struct {
    const msgpack_object *records;
    int step; // 1: build the tables; 2: and call; 3: and convert back
    long done;
} split_t;

static int s_steps(lua_State *L)
{
    split_t *s = lua_touserdata(L, 1);
    msgpack_object out;
    char err[200];
    static drv_lua_memo_t memo;
    for (int i = 0; i < BATCH; i++) {
        if (s->step >= 2) {
            lua_pushvalue(L, lua_upvalueindex(1));
        }
        drv_lua_push_object(L, &s->records[i], &memo);
        if (s->step >= 2) {
            lua_call(L, 1, 1);
        }
        size_t budget = SIZE_MAX;
        if (s->step >= 3 && drv_lua_to_object(L, -1, s_bump, NULL, &memo, &budget, &out, err, sizeof err)) {
            return luaL_error(L, "%s", err);
        }
        lua_pop(L, 1);
        s->done++;
    }
    return 0;
}

static void s_limit(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    luaL_error(L, "instruction limit");
}

static double s_time_step(lua_State *L, int step, const msgpack_object *records, double seconds)
{
    split_t s = {records, step, 0};
    double start = drv_bench_now(), end = start + seconds;
    while (drv_bench_now() < end) {
        lua_pushvalue(L, -1); // the s_steps closure
        lua_pushlightuserdata(L, &s);
        if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
            fprintf(stderr, "lua: %s\n", lua_tostring(L, -1));
            return 0;
        }
    }
    return (drv_bench_now() - start) / (double)s.done * 1e9;
}

int drv_bench_lua_split(double seconds)
{
    msgpack_sbuffer batch;
    msgpack_sbuffer_init(&batch);
    s_pack_batch(&batch, false);
    msgpack_unpacked unpacked;
    msgpack_unpacked_init(&unpacked);
    msgpack_unpack_next(&unpacked, batch.data, batch.size, NULL);
    const msgpack_object *records = unpacked.data.via.array.ptr;

    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    drv_lua_record_setup(L);
    if (luaL_dostring(L, s_script) != LUA_OK) {
        fprintf(stderr, "lua: %s\n", lua_tostring(L, -1));
        return 1;
    }
    lua_getglobal(L, "process");
    lua_pushcclosure(L, s_steps, 1);
    lua_sethook(L, s_limit, LUA_MASKCOUNT, 1000000000); // the hook processor:lua runs under, never reached
    double build = s_time_step(L, 1, records, seconds / 3);
    double call = s_time_step(L, 2, records, seconds / 3);
    double back = s_time_step(L, 3, records, seconds / 3);
    printf("build_table_ns=%.1f call_ns=%.1f to_record_ns=%.1f total_ns=%.1f\n", build, call - build, back - call,
           back);
    lua_close(L);
    msgpack_unpacked_destroy(&unpacked);
    msgpack_sbuffer_destroy(&batch);
    return 0;
}
