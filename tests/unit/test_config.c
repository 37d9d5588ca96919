/*  Engine configuration: YAML typing, line numbers in errors, engine checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "drv_lua.h"
#include "drv_schemas.h"

#include "drover/drv_node_schema.h"

#include "drover/drv_config.h"
#include "drover/drv_yaml.h"

#include <string.h>

static drv_cpus_t s_cpus = {.count = 2, .ids = {0, 1}};

static void test_yaml_scalars_are_typed_and_lines_recorded(void **state)
{
    (void)state;
    const char *text = "a: 1\nb: 1.5\nc: true\nd: null\ne: \"1\"\nf: hello\ng:\n  - x\n  - {h: -3}\n";
    json_t *lines = NULL;
    char err[200];
    json_t *doc = drv_yaml_parse(text, strlen(text), &lines, err, sizeof err);
    assert_non_null(doc);
    assert_true(json_is_integer(json_object_get(doc, "a")));
    assert_true(json_is_real(json_object_get(doc, "b")));
    assert_true(json_is_true(json_object_get(doc, "c")));
    assert_true(json_is_null(json_object_get(doc, "d")));
    assert_string_equal(json_string_value(json_object_get(doc, "e")), "1");
    assert_string_equal(json_string_value(json_object_get(doc, "f")), "hello");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(doc, "g"), 1), "h")), -3);
    assert_int_equal(drv_yaml_line_of(lines, "f"), 6);
    assert_int_equal(drv_yaml_line_of(lines, "g[1].h"), 9);
    assert_int_equal(drv_yaml_line_of(lines, "g[1].h.deeper"), 9);
    json_decref(doc);
    json_decref(lines);
}

static void test_yaml_refuses_duplicates_aliases_and_syntax_errors(void **state)
{
    (void)state;
    char err[200];
    const char *dup = "a: 1\na: 2\n";
    assert_null(drv_yaml_parse(dup, strlen(dup), NULL, err, sizeof err));
    assert_string_equal(err, "line 2: duplicate key \"a\"");
    const char *alias = "a: &x 1\nb: *x\n";
    assert_null(drv_yaml_parse(alias, strlen(alias), NULL, err, sizeof err));
    assert_non_null(strstr(err, "aliases"));
    const char *broken = "a: [1, 2\n";
    assert_null(drv_yaml_parse(broken, strlen(broken), NULL, err, sizeof err));
    assert_non_null(strstr(err, "line"));
}

static void test_config_defaults(void **state)
{
    (void)state;
    char err[300];
    const char *text = "engine:\n  run_dir: /tmp/d\n";
    drv_config_t *config = drv_config_parse(text, strlen(text), "f.yaml", &s_cpus, err, sizeof err);
    assert_non_null(config);
    assert_string_equal(config->admin_zmq, "ipc:///tmp/d/admin.sock");
    assert_string_equal(config->admin_events, "ipc:///tmp/d/events.sock");
    assert_string_equal(config->admin_http, "127.0.0.1:8080");
    assert_int_equal(config->shutdown_timeout_secs, 30);
    assert_null(config->http_token_file);
    drv_config_destroy(&config);
    drv_config_destroy(&config); // safe twice
}

static void test_config_errors_name_file_line_field(void **state)
{
    (void)state;
    char err[300];
    const char *text = "engine:\n  admin:\n    zmq: tcp://0.0.0.0:1\n    insecure: false\n";
    assert_null(drv_config_parse(text, strlen(text), "f.yaml", &s_cpus, err, sizeof err));
    assert_non_null(strstr(err, "f.yaml:3: engine.admin.zmq: tcp:// admin endpoint without CURVE"));
    const char *insecure = "engine:\n  admin:\n    zmq: tcp://0.0.0.0:1\n    http: 0.0.0.0:80\n    insecure: true\n";
    drv_config_t *config = drv_config_parse(insecure, strlen(insecure), "f.yaml", &s_cpus, err, sizeof err);
    assert_non_null(config);
    drv_config_destroy(&config);
    const char *two = "engine:\n  shutdown_timeout_secs: 0\n  credit_window: x\n";
    assert_null(drv_config_parse(two, strlen(two), "f.yaml", &s_cpus, err, sizeof err));
    assert_non_null(
        strstr(err, "f.yaml:2: engine.shutdown_timeout_secs: must be an integer from 1 to 86400 (and 1 more problem)"));
    const char *group = "groups:\n  BAD:\n    pipelines: {}\n";
    assert_null(drv_config_parse(group, strlen(group), "f.yaml", &s_cpus, err, sizeof err));
    assert_non_null(strstr(err, "f.yaml:2: groups.BAD: group name must match"));
}

static void test_config_limits(void **state)
{
    (void)state;
    char err[300];
    const char *defaults = "engine: {}\n";
    drv_config_t *config = drv_config_parse(defaults, strlen(defaults), "f.yaml", &s_cpus, err, sizeof err);
    assert_non_null(config);
    assert_int_equal(config->max_pipelines, 64);
    assert_int_equal(config->max_message_bytes, 4 * 1024 * 1024);
    drv_config_destroy(&config);
    const char *spec = "{ nodes: { g: { type: receiver:generator, to: [o] }, o: { type: exporter:null } } }";
    char three[600];
    snprintf(three, sizeof three,
             "engine:\n  limits: { max_pipelines: 2 }\ngroups:\n  default:\n    pipelines:\n"
             "      a: %s\n      b: %s\n      c: %s\n",
             spec, spec, spec);
    assert_null(drv_config_parse(three, strlen(three), "f.yaml", &s_cpus, err, sizeof err));
    assert_non_null(
        strstr(err, "f.yaml:8: groups.default.pipelines.c: more than 2 pipelines (engine.limits.max_pipelines)"));
    const char *bad = "engine:\n  limits:\n    max_message_bytes: 10\n    max_nodes: 3\n";
    assert_null(drv_config_parse(bad, strlen(bad), "f.yaml", &s_cpus, err, sizeof err));
    assert_non_null(strstr(err, "f.yaml:4: engine.limits.max_nodes: unknown key \"max_nodes\" (allowed: max_pipelines "
                                "max_message_bytes front_door_buffer_bytes stream_queue_bytes) (and 1 more problem)"));
    const char *small = "engine:\n  limits:\n    max_message_bytes: 10\n";
    assert_null(drv_config_parse(small, strlen(small), "f.yaml", &s_cpus, err, sizeof err));
    assert_non_null(
        strstr(err, "f.yaml:3: engine.limits.max_message_bytes: must be an integer from 1024 to 268435456"));
}

//  ${env:} in the config file (drv_config_env.c): expanded in engine keys
//  and node configs, kept in secrets, $${ a literal, refused malformed.
static void test_config_env_expands_every_string_but_secrets(void **state)
{
    (void)state;
    char err[300];
    setenv("DRV_T_DIR", "/tmp/env-d", 1);
    setenv("DRV_T_TOKEN", "s3cret", 1);
    unsetenv("DRV_T_UNSET");
    const char *text =
        "engine:\n  run_dir: ${env:DRV_T_DIR}/run\n  admin: {http: \"127.0.0.1:${env:DRV_T_UNSET:-9}\"}\n"
        "groups:\n  default:\n    pipelines:\n      p:\n        nodes:\n"
        "          g: {type: receiver:generator, to: [o]}\n"
        "          o: {type: exporter:http, config: {endpoint: \"http://h${env:DRV_T_UNSET:-}:1/$${x}\", "
        "headers: {X: \"${env:DRV_T_TOKEN}\"}}}\n";
    drv_config_t *config = drv_config_parse(text, strlen(text), "f.yaml", &s_cpus, err, sizeof err);
    assert_non_null(config);
    assert_string_equal(config->run_dir, "/tmp/env-d/run");
    assert_string_equal(config->admin_http, "127.0.0.1:9");
    json_t *o = json_object_get(
        json_object_get(json_object_get(json_object_get(json_object_get(config->groups, "default"), "p"), "nodes"),
                        "o"),
        "config");
    assert_string_equal(json_string_value(json_object_get(o, "endpoint")), "http://h:1/${x}");
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "headers"), "X")), "${env:DRV_T_TOKEN}");
    drv_config_destroy(&config);
    const char *unset = "engine:\n  run_dir: /tmp/d\n  state_file: \"${env:DRV_T_UNSET}\"\n";
    assert_null(drv_config_parse(unset, strlen(unset), "f.yaml", &s_cpus, err, sizeof err));
    assert_non_null(strstr(err, "f.yaml:3: engine.state_file: ${env:DRV_T_UNSET}: DRV_T_UNSET is not set"));
    const char *bad = "engine:\n  run_dir: \"/tmp/${env:1X}\"\n";
    assert_null(drv_config_parse(bad, strlen(bad), "f.yaml", &s_cpus, err, sizeof err));
    assert_non_null(strstr(err, "f.yaml:2: engine.run_dir: ${env:1X}: ${env:NAME} or ${env:NAME:-default}"));
    setenv("DRV_T_LATIN1", "caf\xe9", 1); // a variable's value that is no UTF-8: refused, not left as it was
    const char *latin = "engine:\n  run_dir: \"/tmp/${env:DRV_T_LATIN1}\"\n";
    assert_null(drv_config_parse(latin, strlen(latin), "f.yaml", &s_cpus, err, sizeof err));
    assert_non_null(strstr(err, "f.yaml:2: engine.run_dir: /tmp/${env:DRV_T_LATIN1}: a variable's value is not UTF-8"));
    const char *open = "engine:\n  run_dir: \"/tmp/${env:X\"\n";
    assert_null(drv_config_parse(open, strlen(open), "f.yaml", &s_cpus, err, sizeof err));
    assert_non_null(strstr(err, "f.yaml:2: engine.run_dir: "));
}

int main(void)
{
    drv_schemas_register();
    drv_spec_set_script_check(drv_lua_script_check, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yaml_scalars_are_typed_and_lines_recorded),
        cmocka_unit_test(test_yaml_refuses_duplicates_aliases_and_syntax_errors),
        cmocka_unit_test(test_config_defaults),
        cmocka_unit_test(test_config_errors_name_file_line_field),
        cmocka_unit_test(test_config_limits),
        cmocka_unit_test(test_config_env_expands_every_string_but_secrets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
