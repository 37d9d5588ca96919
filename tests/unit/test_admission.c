/*  drv_admission, the one check every change to a pipeline passes (PUT,
    rollback, shutdown, DELETE, SIGHUP), against a registry with no process:
    an endpoint another running pipeline binds is a problem at the node's
    path; an operation under way, droverd stopping and max_pipelines are
    conflicts; the pipeline's own endpoint and a stopped pipeline's are free. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "drv_admission.h"
#include "drv_registry.h"
#include "engine_fixture.h"

#include <stdlib.h>
#include <string.h>

static json_t *s_spec(const char *endpoint)
{
    json_t *spec = json_pack("{s:{s:{s:s, s:{s:s}, s:[s]}, s:{s:s}}}", "nodes", "in", "type", "receiver:http", "config",
                             "endpoint", endpoint, "to", "out", "out", "type", "exporter:null");
    assert_non_null(spec);
    return spec;
}

static drv_pipeline_t *s_add(const char *name, const char *endpoint, bool running)
{
    json_t *spec = s_spec(endpoint);
    drv_pipeline_t *p = drv_registry_add_pipeline(&s_engine, "default", name, spec);
    json_decref(spec);
    p->running = running;
    return p;
}

static int s_check(drv_pipeline_t *pipeline, const char *endpoint, char *why, size_t whylen, size_t *problems_out)
{
    json_t *spec = s_spec(endpoint);
    drv_problems_t *problems = drv_problems_new();
    why[0] = 0;
    int rc = drv_admission_check(&s_engine, pipeline, spec, problems, why, whylen);
    *problems_out = drv_problems_count(problems);
    drv_problems_destroy(&problems);
    json_decref(spec);
    return rc;
}

static void test_an_endpoint_a_running_pipeline_binds_is_a_problem_at_its_path(void **state)
{
    (void)state;
    drv_pipeline_t *a = s_add("a", "127.0.0.1:9001", true);
    s_add("stopped", "127.0.0.1:9002", false);
    char why[300];
    size_t problems;
    assert_int_equal(s_check(NULL, "127.0.0.1:9001", why, sizeof why, &problems), DRV_ADMIT_INVALID);
    assert_int_equal(problems, 1);
    assert_int_equal(s_check(a, "127.0.0.1:9001", why, sizeof why, &problems), DRV_ADMIT_OK);    // its own
    assert_int_equal(s_check(NULL, "127.0.0.1:9002", why, sizeof why, &problems), DRV_ADMIT_OK); // nobody runs it
    assert_int_equal(problems, 0);
}

static void test_max_pipelines_and_a_stopping_engine_are_conflicts(void **state)
{
    (void)state;
    s_add("a", "127.0.0.1:9001", true);
    s_add("b", "127.0.0.1:9002", true);
    char why[300];
    size_t problems;
    assert_int_equal(s_check(NULL, "127.0.0.1:9003", why, sizeof why, &problems), DRV_ADMIT_OK);
    s_add("c", "127.0.0.1:9003", true);
    assert_int_equal(s_check(NULL, "127.0.0.1:9004", why, sizeof why, &problems), DRV_ADMIT_CONFLICT);
    assert_non_null(strstr(why, "max_pipelines"));
    s_engine.shutting_down = true;
    drv_pipeline_t *a = drv_registry_pipeline(&s_engine, "default", "a");
    assert_int_equal(s_check(a, "127.0.0.1:9001", why, sizeof why, &problems), DRV_ADMIT_CONFLICT);
    assert_non_null(strstr(why, "shutting down"));
    s_engine.shutting_down = false;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_an_endpoint_a_running_pipeline_binds_is_a_problem_at_its_path,
                                        engine_setup, engine_teardown),
        cmocka_unit_test_setup_teardown(test_max_pipelines_and_a_stopping_engine_are_conflicts, engine_setup,
                                        engine_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
