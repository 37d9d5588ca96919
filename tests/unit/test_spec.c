/*  PipelineSpec validation: every invalid case of schemas/pipeline_spec.md is
    reported with its path; defaults are filled; the hash ignores key order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "drv_lua.h"
#include "drv_schemas.h"

#include "drover/drv_node_schema.h"

#include "drover/drv_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static drv_cpus_t s_cpus = {.count = 4, .ids = {0, 1, 2, 3}};
static const char *const s_dirs[] = {"/data"};
static drv_spec_env_t s_env = {.cpus = &s_cpus, .data_dirs = s_dirs, .data_dir_count = 1, .run_dir = "/run/drover"};

//  Validates a JSON spec; expects exactly the problem (path, message substring).
static void s_expect_problem(const char *json, const char *path, const char *message)
{
    json_error_t jerr;
    json_t *spec = json_loads(json, 0, &jerr);
    if (!spec) {
        fail_msg("bad test JSON: %s", jerr.text);
    }
    drv_problems_t *problems = drv_problems_new();
    json_t *normalized = drv_spec_normalize(spec, &s_env, "", problems);
    assert_null(normalized);
    bool found = false;
    for (size_t i = 0; i < drv_problems_count(problems); i++) {
        if (strcmp(drv_problems_path(problems, i), path) == 0 && strstr(drv_problems_message(problems, i), message)) {
            found = true;
        }
    }
    if (!found) {
        for (size_t i = 0; i < drv_problems_count(problems); i++) {
            printf("  got %s: %s\n", drv_problems_path(problems, i), drv_problems_message(problems, i));
        }
        fail_msg("expected %s: %s", path, message);
    }
    drv_problems_destroy(&problems);
    json_decref(spec);
}

//  The same, and nothing else: one mistake, one message.
static void s_expect_only(const char *json, const char *path, const char *message)
{
    s_expect_problem(json, path, message);
    json_t *spec = json_loads(json, 0, NULL);
    drv_problems_t *problems = drv_problems_new();
    json_decref(drv_spec_normalize(spec, &s_env, "", problems));
    for (size_t i = 1; i < drv_problems_count(problems); i++) {
        printf("  also %s: %s\n", drv_problems_path(problems, i), drv_problems_message(problems, i));
    }
    assert_int_equal(drv_problems_count(problems), 1);
    drv_problems_destroy(&problems);
    json_decref(spec);
}

#define GEN "\"in\":{\"type\":\"receiver:generator\",\"to\":[\"out\"]}"
#define NULLOUT "\"out\":{\"type\":\"exporter:null\"}"

static void test_invalid_specs_name_path_and_reason(void **state)
{
    (void)state;
    s_expect_problem("{\"nodes\":{\"in\":{\"type\":\"receiver:generator\",\"to\":[\"keep\"]},"
                     "\"keep\":{\"type\":\"processor:filter\",\"config\":{\"field\":\"level\",\"op\":\"gte\",\"value\":"
                     "3},\"to\":[\"out\"]}," NULLOUT "}}",
                     "nodes.keep.config.op", "unknown op \"gte\"");
    s_expect_problem("{\"nodes\":{" GEN ",\"out\":{\"type\":\"exporter:pigeon\"}}}", "nodes.out.type",
                     "unknown node type");
    s_expect_problem("{\"nodes\":{\"in\":{\"type\":\"receiver:generator\",\"to\":[\"x\"]}," NULLOUT "}}", "nodes.in.to",
                     "dangling: no node \"x\"");
    s_expect_problem("{\"nodes\":{" NULLOUT "}}", "nodes", "at least one receiver");
    s_expect_problem("{\"nodes\":{\"in\":{\"type\":\"receiver:generator\",\"to\":[\"t\"]},"
                     "\"t\":{\"type\":\"processor:transform\",\"to\":[\"t\"]}}}",
                     "nodes", "at least one exporter");
    s_expect_problem("{\"nodes\":{\"in\":{\"type\":\"receiver:generator\",\"to\":[\"a\"]},"
                     "\"a\":{\"type\":\"processor:transform\",\"to\":[\"b\",\"out\"]},"
                     "\"b\":{\"type\":\"processor:transform\",\"to\":[\"a\"]}," NULLOUT "}}",
                     "nodes.a.to", "cycle");
    s_expect_problem("{\"nodes\":{" GEN ",\"out\":{\"type\":\"exporter:null\",\"config\":{\"speed\":1}}}}",
                     "nodes.out.config.speed", "unknown config key \"speed\"");
    s_expect_problem("{\"nodes\":{" GEN ",\"out\":{\"type\":\"exporter:file\"}}}", "nodes.out.config.path", "required");
    s_expect_problem(
        "{\"nodes\":{\"in\":{\"type\":\"receiver:zmq\",\"config\":{\"endpoint\":\"udp://x\"},\"to\":[\"out\"]}," NULLOUT
        "}}",
        "nodes.in.config.endpoint", "must start with tcp:// or ipc://");
    s_expect_problem("{\"nodes\":{" GEN "," NULLOUT ",\"Bad!\":{\"type\":\"exporter:null\"}}}", "nodes.Bad!",
                     "must match");
    s_expect_problem("{\"cores\":{\"count\":5},\"nodes\":{" GEN "," NULLOUT "}}", "cores.count",
                     "5 cores asked, only 4 CPUs allowed");
    s_expect_problem("{\"cores\":{\"set\":[1,9]},\"nodes\":{" GEN "," NULLOUT "}}", "cores.set[1]",
                     "CPU 9 is not among");
    s_expect_problem("{\"cores\":{\"count\":1,\"all\":true},\"nodes\":{" GEN "," NULLOUT "}}", "cores",
                     "exactly one of");
    s_expect_problem("{\"nodes\":{" GEN "," NULLOUT "},\"extra\":1}", "extra", "unknown key");
    s_expect_problem("{\"nodes\":{" GEN "," NULLOUT "},\"policies\":{\"restart\":{\"max_restarts\":-1}}}",
                     "policies.restart.max_restarts", "from 0 to");
    //  Every number has a range (issue 10): no wrap into int, no overflow.
    s_expect_problem("{\"nodes\":{" GEN "," NULLOUT
                     "},\"policies\":{\"rollout\":{\"step_timeout_secs\":9223372036854775807}}}",
                     "policies.rollout.step_timeout_secs", "from 1 to 86400");
    s_expect_problem("{\"cores\":{\"set\":[4294967296]},\"nodes\":{" GEN "," NULLOUT "}}", "cores.set[0]",
                     "out of range");
    s_expect_problem(
        "{\"nodes\":{" GEN
        ",\"out\":{\"type\":\"exporter:zmq\",\"config\":{\"endpoint\":\"tcp://127.0.0.1:1\",\"hwm\":4294967296}}}}",
        "nodes.out.config.hwm", "from 0 to 1000000");
    //  Files and sockets stay inside data_dirs and run_dir.
    s_expect_problem("{\"nodes\":{" GEN ",\"out\":{\"type\":\"exporter:file\",\"config\":{\"path\":\"/etc/passwd\"}}}}",
                     "nodes.out.config.path", "outside engine.data_dirs");
    s_expect_problem("{\"nodes\":{" GEN
                     ",\"out\":{\"type\":\"exporter:file\",\"config\":{\"path\":\"/data/../etc/x\"}}}}",
                     "nodes.out.config.path", "outside engine.data_dirs");
    s_expect_problem("{\"nodes\":{" GEN ",\"out\":{\"type\":\"exporter:file\",\"config\":{\"path\":\"/database/x\"}}}}",
                     "nodes.out.config.path", "outside engine.data_dirs");
    s_expect_problem("{\"nodes\":{\"in\":{\"type\":\"receiver:zmq\",\"config\":{\"endpoint\":\"ipc:///tmp/"
                     "x.sock\"},\"to\":[\"out\"]}," NULLOUT "}}",
                     "nodes.in.config.endpoint", "outside engine.data_dirs");
    //  Nesting is bounded the same way on every way in.
    {
        char deep[400] = "{\"nodes\":{" GEN ",\"out\":{\"type\":\"exporter:null\",\"config\":";
        for (int i = 0; i < 40; i++) {
            strcat(deep, "[");
        }
        for (int i = 0; i < 40; i++) {
            strcat(deep, "]");
        }
        strcat(deep, "}}}");
        s_expect_problem(deep, "", "nested deeper than 24");
    }
    s_expect_problem(
        "{\"nodes\":{" GEN
        ",\"f\":{\"type\":\"processor:filter\",\"config\":{\"field\":\"a\",\"op\":\"eq\"},\"to\":[\"out\"]}," NULLOUT
        "}}",
        "nodes.f", "not reachable from any receiver");
    s_expect_problem("{\"nodes\":{\"in\":{\"type\":\"receiver:generator\",\"to\":[\"f\"]},\"f\":{\"type\":\"processor:"
                     "filter\",\"config\":{\"field\":\"a\",\"op\":\"eq\"},\"to\":[\"out\"]}," NULLOUT "}}",
                     "nodes.f.config.value", "required unless op is exists");
    s_expect_problem("{\"nodes\":{" GEN ",\"o2\":{\"type\":\"exporter:null\"}," NULLOUT "}}", "nodes.o2",
                     "not reachable from any receiver");
    s_expect_problem("{\"nodes\":{\"in\":{\"type\":\"receiver:generator\",\"to\":[\"in2\"]},"
                     "\"in2\":{\"type\":\"receiver:generator\",\"to\":[\"out\"]}," NULLOUT "}}",
                     "nodes.in.to", "is a receiver and cannot take input");
    s_expect_problem("[]", "", "must be a map");
    s_expect_problem("{\"nodes\":{" GEN "," NULLOUT "},\"policies\":{\"health\":{\"exporter_failing_secs\":0}}}",
                     "policies.health.exporter_failing_secs", "from 1 to");
    s_expect_problem("{\"nodes\":{" GEN "," NULLOUT "},\"policies\":{\"health\":{\"exporter_failing\":3}}}",
                     "policies.health.exporter_failing", "unknown key");
    s_expect_problem("{\"nodes\":{" GEN "," NULLOUT "},\"policies\":{\"healht\":{}}}", "policies.healht",
                     "(rollout, restart, buffer, health)");
}

static void test_a_mistake_is_said_once_with_what_was_meant(void **state)
{
    (void)state;
    //  An unknown type lists the kinds and guesses; the graph is not judged on top.
    s_expect_only("{\"nodes\":{\"in\":{\"type\":\"receiver:generatr\",\"to\":[\"out\"]}," NULLOUT "}}", "nodes.in.type",
                  "(did you mean receiver:generator? one of: receiver:zmq, ");
    //  A dangling edge guesses the node meant, and nothing cascades from it.
    s_expect_only("{\"nodes\":{\"in\":{\"type\":\"receiver:generator\",\"to\":[\"outt\"]}," NULLOUT "}}", "nodes.in.to",
                  "dangling: no node \"outt\" (did you mean out?)");
    //  An unknown config key lists the keys and guesses.
    s_expect_only(
        "{\"nodes\":{\"in\":{\"type\":\"receiver:generator\",\"config\":{\"rat\":5},\"to\":[\"out\"]}," NULLOUT "}}",
        "nodes.in.config.rat", "(did you mean rate? it takes: rate, count, record)");
    s_expect_only("{\"nodes\":{" GEN ",\"out\":{\"type\":\"exporter:null\",\"config\":{\"x\":1}}}}",
                  "nodes.out.config.x", "unknown config key \"x\" for exporter:null (it takes: queue)");
    //  Every exporter's queue (worker/export/drv_queue.h).
    s_expect_only("{\"nodes\":{" GEN
                  ",\"out\":{\"type\":\"exporter:null\",\"config\":{\"queue\":{\"max_bytes\":10}}}}}",
                  "nodes.out", "config.queue.max_bytes: must be an integer from 1024 to 17179869184");
    s_expect_only("{\"nodes\":{" GEN
                  ",\"out\":{\"type\":\"exporter:null\",\"config\":{\"queue\":{\"when_full\":\"drop\"}}}}}",
                  "nodes.out", "config.queue.when_full: must be block or drop_oldest");
    s_expect_only("{\"nodes\":{" GEN ",\"out\":{\"type\":\"exporter:null\",\"config\":{\"queue\":{\"size\":1}}}}}",
                  "nodes.out", "config.queue.size: unknown key (max_bytes, when_full)");
}

static void test_defaults_are_filled_and_hash_ignores_key_order(void **state)
{
    (void)state;
    json_t *a = json_loads(
        "{\"nodes\":{" GEN ",\"out\":{\"type\":\"exporter:file\",\"config\":{\"path\":\"/data/x\"}}}}", 0, NULL);
    json_t *b = json_loads("{\"nodes\":{\"out\":{\"config\":{\"format\":\"ndjson\",\"path\":\"/data/"
                           "x\"},\"type\":\"exporter:file\",\"to\":[]}," GEN "},"
                           "\"cores\":{\"count\":1},\"policies\":{\"rollout\":{\"step_timeout_secs\":60}}}",
                           0, NULL);
    drv_problems_t *problems = drv_problems_new();
    json_t *na = drv_spec_normalize(a, &s_env, "", problems);
    json_t *nb = drv_spec_normalize(b, &s_env, "", problems);
    assert_int_equal(drv_problems_count(problems), 0);
    assert_non_null(na);
    assert_non_null(nb);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(na, "cores"), "count")), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(json_object_get(na, "nodes"), "out"), "config"), "format")),
                        "ndjson");
    assert_int_equal(drv_spec_policy(na, "restart", "max_backoff_ms"), 30000);
    assert_int_equal(drv_spec_policy(na, "rollout", "drain_timeout_secs"), 60);
    //  An optional policy not given is not in the spec (the hash stays what
    //  it was before the policy existed), yet has its default.
    assert_null(json_object_get(json_object_get(na, "policies"), "health"));
    assert_int_equal(drv_spec_policy(na, "health", "exporter_failing_secs"), 30);
    char *ha = drv_spec_hash(na);
    char *hb = drv_spec_hash(nb);
    assert_string_equal(ha, hb);
    assert_int_equal(strncmp(ha, "sha1:", 5), 0);
    //  A real change changes the hash.
    json_object_set_new(json_object_get(na, "cores"), "count", json_integer(2));
    char *hc = drv_spec_hash(na);
    assert_string_not_equal(ha, hc);
    free(ha);
    free(hb);
    free(hc);
    json_decref(na);
    json_decref(nb);
    json_decref(a);
    json_decref(b);
    drv_problems_destroy(&problems);
}

static void test_cores_resolve_from_allowed_cpus(void **state)
{
    (void)state;
    drv_cpus_t cpus = {.count = 3, .ids = {2, 5, 7}};
    int cores[8];
    json_t *spec = json_pack("{s:{s:i}}", "cores", "count", 2);
    assert_int_equal(drv_spec_cores(spec, &cpus, cores, 8), 2);
    assert_int_equal(cores[0], 2);
    assert_int_equal(cores[1], 5);
    json_decref(spec);
    spec = json_pack("{s:{s:[i,i]}}", "cores", "set", 7, 2);
    assert_int_equal(drv_spec_cores(spec, &cpus, cores, 8), 2);
    assert_int_equal(cores[0], 2);
    assert_int_equal(cores[1], 7);
    json_decref(spec);
    spec = json_pack("{s:{s:b}}", "cores", "all", 1);
    assert_int_equal(drv_spec_cores(spec, &cpus, cores, 8), 3);
    json_decref(spec);
}

static void test_canary_policy_is_checked_and_defaulted(void **state)
{
    (void)state;
    s_expect_problem("{\"nodes\":{" GEN "," NULLOUT "},\"policies\":{\"rollout\":{\"canary\":{\"cores\":0}}}}",
                     "policies.rollout.canary.cores", "from 1 to");
    s_expect_problem("{\"nodes\":{" GEN "," NULLOUT
                     "},\"policies\":{\"rollout\":{\"canary\":{\"max_error_ratio\":2}}}}",
                     "policies.rollout.canary.max_error_ratio", "from 0 to 1");
    s_expect_problem("{\"nodes\":{" GEN "," NULLOUT "},\"policies\":{\"rollout\":{\"canary\":{\"hold\":3}}}}",
                     "policies.rollout.canary.hold", "unknown key \"hold\"");
    s_expect_problem("{\"nodes\":{" GEN "," NULLOUT "},\"policies\":{\"rollout\":{\"canary\":{\"auto_promote\":1}}}}",
                     "policies.rollout.canary.auto_promote", "true or false");
    s_expect_problem("{\"nodes\":{" GEN "," NULLOUT "},\"policies\":{\"rollout\":{\"canary\":5}}}",
                     "policies.rollout.canary", "must be a map");
    json_t *given = json_loads(
        "{\"nodes\":{" GEN "," NULLOUT "},\"policies\":{\"rollout\":{\"canary\":{\"hold_secs\":5}}}}", 0, NULL);
    json_t *plain = json_loads("{\"nodes\":{" GEN "," NULLOUT "}}", 0, NULL);
    drv_problems_t *problems = drv_problems_new();
    json_t *with = drv_spec_normalize(given, &s_env, "", problems);
    json_t *without = drv_spec_normalize(plain, &s_env, "", problems);
    assert_int_equal(drv_problems_count(problems), 0);
    json_t *canary = json_object_get(json_object_get(json_object_get(with, "policies"), "rollout"), "canary");
    assert_int_equal(json_integer_value(json_object_get(canary, "cores")), 1);
    assert_int_equal(json_integer_value(json_object_get(canary, "hold_secs")), 5);
    assert_true(json_real_value(json_object_get(canary, "max_error_ratio")) == 0.01);
    assert_true(json_is_true(json_object_get(canary, "auto_promote")));
    //  No canary given: none added (the hash of every older spec stays).
    assert_null(json_object_get(json_object_get(json_object_get(without, "policies"), "rollout"), "canary"));
    json_decref(with);
    json_decref(without);
    json_decref(given);
    json_decref(plain);
    drv_problems_destroy(&problems);
}

int main(void)
{
    drv_schemas_register();
    drv_spec_set_script_check(drv_lua_script_check, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalid_specs_name_path_and_reason),
        cmocka_unit_test(test_a_mistake_is_said_once_with_what_was_meant),
        cmocka_unit_test(test_defaults_are_filled_and_hash_ignores_key_order),
        cmocka_unit_test(test_canary_policy_is_checked_and_defaulted),
        cmocka_unit_test(test_cores_resolve_from_allowed_cpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
