/*  The planner with no processes at all: every action, the order of steps,
    and the rollback of a plan that failed part-way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "drv_planner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *s_spec(const char *filter_value)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"nodes\":{\"in\":{\"type\":\"receiver:generator\",\"config\":{},\"to\":[\"f\"]},"
             "\"f\":{\"type\":\"processor:filter\",\"config\":{\"field\":\"a\",\"op\":\"eq\",\"value\":%s},\"to\":["
             "\"out\"]},"
             "\"out\":{\"type\":\"exporter:null\",\"config\":{},\"to\":[]}}}",
             filter_value);
    return json_loads(text, 0, NULL);
}

//  Renders a plan as "op:core@gen op:core@gen ..." for compact assertions.
static char *s_render(const drv_plan_t *plan)
{
    static char out[4096];
    out[0] = 0;
    for (size_t i = 0; i < plan->count; i++) {
        size_t used = strlen(out);
        snprintf(out + used, sizeof out - used, "%s%s:%d@%lld", i ? " " : "", drv_op_name(plan->steps[i].op),
                 plan->steps[i].core, (long long)plan->steps[i].generation);
    }
    return out;
}

static drv_plan_t s_plan;
static drv_plan_t s_back;

static void test_create_brings_up_every_core(void **state)
{
    (void)state;
    json_t *spec = s_spec("1");
    int cores[] = {0, 1};
    drv_observed_t none = {.running = false, .generation = 0};
    drv_plan_make(spec, cores, 2, &none, &s_plan);
    assert_int_equal(s_plan.action, DRV_ACTION_CREATE);
    assert_int_equal(s_plan.target_generation, 1);
    //  Nothing to hand over: every core starts at once.
    assert_string_equal(s_render(&s_plan), "start:0@1 start:1@1 wait_ready:0@1 wait_ready:1@1 switch:0@1 switch:1@1");
    //  A pipeline that was shut down at generation 3 comes back as generation 4.
    drv_observed_t stopped = {.running = false, .generation = 3};
    drv_plan_make(spec, cores, 1, &stopped, &s_plan);
    assert_int_equal(s_plan.action, DRV_ACTION_CREATE);
    assert_string_equal(s_render(&s_plan), "start:0@4 wait_ready:0@4 switch:0@4");
    json_decref(spec);
}

static void test_identical_spec_is_noop_whatever_the_key_order(void **state)
{
    (void)state;
    json_t *a = s_spec("1");
    json_t *b = json_loads(
        "{\"nodes\":{\"out\":{\"to\":[],\"config\":{},\"type\":\"exporter:null\"},"
        "\"f\":{\"to\":[\"out\"],\"config\":{\"value\":1,\"op\":\"eq\",\"field\":\"a\"},\"type\":\"processor:filter\"},"
        "\"in\":{\"to\":[\"f\"],\"config\":{},\"type\":\"receiver:generator\"}}}",
        0, NULL);
    int cores[] = {0, 1};
    drv_observed_t running = {true, a, 5, 0, cores, 2, false};
    drv_plan_make(b, cores, 2, &running, &s_plan);
    assert_int_equal(s_plan.action, DRV_ACTION_NOOP);
    assert_int_equal(s_plan.count, 0);
    assert_int_equal(s_plan.target_generation, 5);
    json_decref(a);
    json_decref(b);
}

static void test_renew_replaces_every_core_with_the_same_spec(void **state)
{
    (void)state;
    json_t *spec = s_spec("1");
    int cores[] = {0, 1};
    drv_observed_t upgraded = {true, spec, 5, 7, cores, 2, true}; // an upgrade: new binaries, same spec
    drv_plan_make(spec, cores, 2, &upgraded, &s_plan);
    assert_int_equal(s_plan.action, DRV_ACTION_REPLACE);
    assert_int_equal(s_plan.target_generation, 7);
    assert_string_equal(s_render(&s_plan), "start:0@7 wait_ready:0@7 switch:0@7 drain:0@5 "
                                           "start:1@7 wait_ready:1@7 switch:1@7 drain:1@5");
    json_decref(spec);
}

static void test_resize_touches_only_added_and_removed_cores(void **state)
{
    (void)state;
    json_t *old_spec = s_spec("1");
    json_t *new_spec = s_spec("1");
    json_object_set_new(new_spec, "cores", json_pack("{s:i}", "count", 3));
    int old_cores[] = {0, 2};
    int new_cores[] = {0, 1, 2};
    drv_observed_t running = {true, old_spec, 2, 0, old_cores, 2, false};
    drv_plan_make(new_spec, new_cores, 3, &running, &s_plan);
    assert_int_equal(s_plan.action, DRV_ACTION_RESIZE);
    assert_int_equal(s_plan.target_generation, 2);
    assert_string_equal(s_render(&s_plan), "start:1@2 wait_ready:1@2 switch:1@2");
    int shrink[] = {2};
    drv_plan_make(new_spec, shrink, 1, &running, &s_plan);
    assert_int_equal(s_plan.action, DRV_ACTION_RESIZE);
    assert_string_equal(s_render(&s_plan), "drain:0@2");
    int moved[] = {1};
    drv_plan_make(new_spec, moved, 1, &running, &s_plan);
    assert_string_equal(s_render(&s_plan), "start:1@2 wait_ready:1@2 switch:1@2 drain:0@2 drain:2@2");
    //  Another way of saying the same cores: a resize with nothing to do.
    json_object_set_new(new_spec, "cores", json_pack("{s:[i,i]}", "set", 0, 2));
    drv_plan_make(new_spec, old_cores, 2, &running, &s_plan);
    assert_int_equal(s_plan.action, DRV_ACTION_RESIZE);
    assert_int_equal(s_plan.count, 0);
    json_decref(old_spec);
    json_decref(new_spec);
}

static void test_replace_goes_core_by_core_added_first_removed_last(void **state)
{
    (void)state;
    json_t *old_spec = s_spec("1");
    json_t *new_spec = s_spec("2");
    int cores[] = {0, 1};
    drv_observed_t running = {true, old_spec, 1, 0, cores, 2, false};
    drv_plan_make(new_spec, cores, 2, &running, &s_plan);
    assert_int_equal(s_plan.action, DRV_ACTION_REPLACE);
    assert_int_equal(s_plan.target_generation, 2);
    assert_int_equal(s_plan.previous_generation, 1);
    assert_string_equal(s_render(&s_plan), "start:0@2 wait_ready:0@2 switch:0@2 drain:0@1 "
                                           "start:1@2 wait_ready:1@2 switch:1@2 drain:1@1");
    int one[] = {0};
    drv_observed_t small = {true, old_spec, 1, 0, one, 1, false};
    drv_plan_make(new_spec, cores, 2, &small, &s_plan);
    assert_string_equal(s_render(&s_plan), "start:1@2 wait_ready:1@2 switch:1@2 "
                                           "start:0@2 wait_ready:0@2 switch:0@2 drain:0@1");
    drv_plan_make(new_spec, one, 1, &running, &s_plan);
    assert_string_equal(s_render(&s_plan), "start:0@2 wait_ready:0@2 switch:0@2 drain:0@1 drain:1@1");
    json_object_set_new(new_spec, "cores", json_pack("{s:i}", "count", 2)); // cores and more changed
    drv_plan_make(new_spec, cores, 2, &running, &s_plan);
    assert_int_equal(s_plan.action, DRV_ACTION_REPLACE);
    json_decref(old_spec);
    json_decref(new_spec);
}

static void test_canary_switches_its_cores_then_holds(void **state)
{
    (void)state;
    json_t *old_spec = s_spec("1");
    json_t *new_spec = s_spec("2");
    int cores[] = {0, 1, 2};
    drv_observed_t running = {true, old_spec, 1, 0, cores, 3, false};
    drv_plan_make(new_spec, cores, 3, &running, &s_plan);
    drv_plan_canary(&s_plan, cores, 3, &running, 1);
    assert_string_equal(s_render(&s_plan), "start:0@2 wait_ready:0@2 switch:0@2 drain:0@1 hold:-1@2 "
                                           "start:1@2 wait_ready:1@2 switch:1@2 drain:1@1 "
                                           "start:2@2 wait_ready:2@2 switch:2@2 drain:2@1");
    //  One core: nothing of the old generation would be left to compare
    //  with, so the canary overlaps it on the same core.
    drv_observed_t one = {true, old_spec, 1, 0, cores, 1, false};
    drv_plan_make(new_spec, cores, 1, &one, &s_plan);
    drv_plan_canary(&s_plan, cores, 1, &one, 1);
    assert_string_equal(s_render(&s_plan), "start:0@2 wait_ready:0@2 switch:0@2 hold:-1@2 drain:0@1");
    //  Grown from one core to two: the kept core is the canary, the added one comes after the hold.
    drv_plan_make(new_spec, cores, 2, &one, &s_plan);
    drv_plan_canary(&s_plan, cores, 2, &one, 1);
    assert_string_equal(s_render(&s_plan), "start:0@2 wait_ready:0@2 switch:0@2 hold:-1@2 drain:0@1 "
                                           "start:1@2 wait_ready:1@2 switch:1@2");
    //  A rollback of a failed hold gives the canary core back to generation 1.
    drv_plan_make(new_spec, cores, 3, &running, &s_plan);
    drv_plan_canary(&s_plan, cores, 3, &running, 1);
    drv_plan_rollback(&s_plan, 4, &running, &s_back);
    assert_string_equal(s_render(&s_back), "start:0@1 wait_ready:0@1 switch:0@1 stop:0@2");
    //  A resize is never a canary.
    json_t *resized = json_deep_copy(old_spec);
    json_object_set_new(resized, "cores", json_pack("{s:i}", "count", 2));
    drv_plan_make(resized, cores, 2, &running, &s_plan);
    drv_plan_canary(&s_plan, cores, 2, &running, 1);
    assert_string_equal(s_render(&s_plan), "drain:2@1");
    json_decref(resized);
    json_decref(old_spec);
    json_decref(new_spec);
}

static void test_rollback_restores_the_old_generation_from_where_it_stopped(void **state)
{
    (void)state;
    json_t *old_spec = s_spec("1");
    json_t *new_spec = s_spec("2");
    int cores[] = {0, 1};
    drv_observed_t running = {true, old_spec, 1, 0, cores, 2, false};
    drv_plan_make(new_spec, cores, 2, &running, &s_plan);
    //  Failed while waiting for core 0's new instance: only it goes.
    drv_plan_rollback(&s_plan, 1, &running, &s_back);
    assert_string_equal(s_render(&s_back), "stop:0@2");
    assert_int_equal(s_back.target_generation, 1);
    //  Failed on core 1, after core 0 was handed over and its old instance drained:
    //  core 0's old instance comes back and is ready before the new one goes.
    drv_plan_rollback(&s_plan, 6, &running, &s_back);
    assert_string_equal(s_render(&s_back), "stop:1@2 start:0@1 wait_ready:0@1 switch:0@1 stop:0@2");
    //  A failed create leaves nothing running.
    drv_observed_t none = {.running = false, .generation = 0};
    drv_plan_make(new_spec, cores, 2, &none, &s_plan);
    drv_plan_rollback(&s_plan, 3, &none, &s_back);
    assert_string_equal(s_render(&s_back), "stop:1@1 stop:0@1");
    //  A failed resize: the added core's instance goes; kept cores were never touched.
    json_t *bigger = s_spec("1");
    json_object_set_new(bigger, "cores", json_pack("{s:i}", "count", 2));
    int one[] = {0};
    drv_observed_t small = {true, old_spec, 1, 0, one, 1, false};
    drv_plan_make(bigger, cores, 2, &small, &s_plan);
    assert_int_equal(s_plan.action, DRV_ACTION_RESIZE);
    drv_plan_rollback(&s_plan, 2, &small, &s_back);
    assert_string_equal(s_render(&s_back), "stop:1@1");
    json_decref(bigger);
    json_decref(old_spec);
    json_decref(new_spec);
}

static void test_plan_as_json(void **state)
{
    (void)state;
    json_t *spec = s_spec("1");
    int cores[] = {3};
    drv_observed_t none = {.running = false};
    drv_plan_make(spec, cores, 1, &none, &s_plan);
    json_t *steps = drv_plan_to_json(&s_plan);
    char *text = json_dumps(steps, JSON_COMPACT);
    assert_string_equal(text, "[{\"step\":1,\"op\":\"start\",\"core\":3,\"generation\":1},"
                              "{\"step\":2,\"op\":\"wait_ready\",\"core\":3,\"generation\":1},"
                              "{\"step\":3,\"op\":\"switch\",\"core\":3,\"generation\":1}]");
    free(text);
    json_decref(steps);
    json_decref(spec);
}

//  A supervised create starts every core at once: start steps first, the
//  rest in their order.
static void test_starts_first_is_a_stable_partition(void **state)
{
    (void)state;
    json_t *spec = json_loads("{\"cores\":{\"count\":2},\"nodes\":{}}", 0, NULL);
    int cores[] = {0, 1};
    drv_observed_t none = {.running = false, .generation = 0};
    drv_plan_make(spec, cores, 2, &none, &s_plan);
    drv_plan_starts_first(&s_plan);
    assert_string_equal(s_render(&s_plan), "start:0@1 start:1@1 wait_ready:0@1 wait_ready:1@1 switch:0@1 switch:1@1");
    json_decref(spec);
}

//  Plans are sized to what they hold; the statics are freed at the end.
static int s_teardown(void **state)
{
    (void)state;
    drv_plan_clear(&s_plan);
    drv_plan_clear(&s_back);
    return 0;
}

//  A generation number is never given twice: after a failed 4 -> 5, the
//  next replace and a create after a shutdown both take 6.
static void test_a_failed_rollouts_number_is_not_reused(void **state)
{
    (void)state;
    json_t *a = json_pack("{s:i}", "v", 1), *b = json_pack("{s:i}", "v", 2);
    int cores[] = {0};
    drv_observed_t running = {true, a, 4, 6, cores, 1, false};
    drv_plan_t plan = {0};
    drv_plan_make(b, cores, 1, &running, &plan);
    assert_int_equal(plan.target_generation, 6);
    assert_int_equal(plan.previous_generation, 4);
    drv_observed_t stopped = {.running = false, .generation = 4, .next_generation = 6};
    drv_plan_make(b, cores, 1, &stopped, &plan);
    assert_int_equal(plan.target_generation, 6);
    drv_observed_t fresh = {true, a, 4, 0, cores, 1, false}; // nothing recorded: the next one
    drv_plan_make(b, cores, 1, &fresh, &plan);
    assert_int_equal(plan.target_generation, 5);
    drv_plan_clear(&plan);
    json_decref(a);
    json_decref(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_failed_rollouts_number_is_not_reused),
        cmocka_unit_test(test_create_brings_up_every_core),
        cmocka_unit_test(test_identical_spec_is_noop_whatever_the_key_order),
        cmocka_unit_test(test_resize_touches_only_added_and_removed_cores),
        cmocka_unit_test(test_renew_replaces_every_core_with_the_same_spec),
        cmocka_unit_test(test_replace_goes_core_by_core_added_first_removed_last),
        cmocka_unit_test(test_canary_switches_its_cores_then_holds),
        cmocka_unit_test(test_rollback_restores_the_old_generation_from_where_it_stopped),
        cmocka_unit_test(test_plan_as_json),
        cmocka_unit_test(test_starts_first_is_a_stable_partition),
    };
    return cmocka_run_group_tests(tests, NULL, s_teardown);
}
