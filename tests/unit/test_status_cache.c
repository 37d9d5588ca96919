/*  /status's kept text (observe/drv_status.c) against a registry with no
    process: the text is made once and served again while nothing is
    touched (a shown field changed without drv_registry_touch stays as it
    was: that is what the tests' DROVER_CHECK_STATUS_CACHE catches), made
    again once the pipeline is touched, and only touched pipelines have
    their conditions refreshed on a turn of the loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "drv_registry.h"
#include "engine_fixture.h"
#include "drv_status.h"

#include <stdlib.h>
#include <string.h>

static drv_instance_t *s_pipeline_with_instance(const char *name)
{
    json_t *spec = json_pack("{s:{s:i}, s:{s:{s:s, s:[s]}, s:{s:s}}}", "cores", "count", 1, "nodes", "in", "type",
                             "receiver:generator", "to", "out", "out", "type", "exporter:null");
    drv_pipeline_t *p = drv_registry_add_pipeline(&s_engine, "default", name, spec);
    json_decref(spec);
    p->running = true;
    p->generation = 1;
    drv_instance_t *inst = drv_registry_add_instance(&s_engine, p, 0, 1, p->spec);
    inst->state = DRV_INST_READY;
    return inst;
}

static bool s_shows(const char *needle)
{
    char *text = drv_status_all_text(&s_engine);
    bool found = strstr(text, needle) != NULL;
    free(text);
    return found;
}

static void test_the_text_changes_when_the_pipeline_is_touched(void **state)
{
    (void)state;
    drv_instance_t *inst = s_pipeline_with_instance("p");
    drv_status_refresh(&s_engine);
    inst->records_in = 111;
    drv_registry_touch(&s_engine, inst->pipeline);
    assert_true(s_shows("\"records_in\":111"));
    inst->records_in = 222; // not touched: the kept text is served
    assert_true(s_shows("\"records_in\":111"));
    drv_registry_touch(&s_engine, inst->pipeline);
    assert_true(s_shows("\"records_in\":222"));
}

static void test_a_turn_refreshes_only_touched_pipelines(void **state)
{
    (void)state;
    drv_instance_t *a = s_pipeline_with_instance("a");
    drv_instance_t *b = s_pipeline_with_instance("b");
    drv_status_refresh(&s_engine);
    assert_true(a->pipeline->cond_ready.status);
    assert_true(b->pipeline->cond_ready.status);
    assert_false(a->pipeline->dirty || b->pipeline->dirty);
    a->state = DRV_INST_FAILED;
    b->state = DRV_INST_FAILED;
    drv_registry_touch(&s_engine, a->pipeline); // only a says so
    assert_true(a->pipeline->dirty);
    drv_status_refresh(&s_engine);
    assert_false(a->pipeline->cond_ready.status); // refreshed
    assert_true(b->pipeline->cond_ready.status);  // not looked at: nothing touched it
    assert_false(a->pipeline->dirty);
}

static void test_a_removed_pipeline_leaves_the_dirty_list(void **state)
{
    (void)state;
    drv_instance_t *a = s_pipeline_with_instance("a");
    drv_pipeline_t *p = a->pipeline;
    drv_registry_remove_instance(&s_engine, a); // touches p
    assert_true(p->dirty);
    drv_registry_remove_pipeline(&s_engine, p); // frees p: the list must not keep it
    drv_status_refresh(&s_engine);              // would read freed memory (valgrind_status_cache)
    assert_true(s_engine.dirty == NULL || zlistx_size(s_engine.dirty) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_the_text_changes_when_the_pipeline_is_touched, engine_setup,
                                        engine_teardown),
        cmocka_unit_test_setup_teardown(test_a_turn_refreshes_only_touched_pipelines, engine_setup, engine_teardown),
        cmocka_unit_test_setup_teardown(test_a_removed_pipeline_leaves_the_dirty_list, engine_setup, engine_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
