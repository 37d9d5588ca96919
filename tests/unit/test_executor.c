/*  The executor with a fake adapter: no process, no engine. Slots are a small
    table the test changes as instances would (READY, exited); every effect
    the executor asks for is written to a log the tests compare. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "drv_executor.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    int core;
    int64_t generation;
    drv_slot_state_t state;
    char id[32];
    char detail[64];
} slot_t;

typedef struct {
    slot_t slots[16];
    int count;
    char log[2048];      // effects and notes, in order
    bool retire_removes; // retire removes a slot at once (nothing was running)
} fake_t;

static fake_t s_fake;
static drv_plan_t s_plan;
static drv_executor_t s_exec;
static json_t *s_old_spec, *s_new_spec;
static int s_core0 = 0;
static drv_observed_t s_observed;

static void s_log(const char *fmt, ...)
{
    size_t used = strlen(s_fake.log);
    va_list args;
    va_start(args, fmt);
    vsnprintf(s_fake.log + used, sizeof s_fake.log - used, fmt, args);
    va_end(args);
}

static slot_t *s_slot(int core, int64_t generation)
{
    for (int i = 0; i < s_fake.count; i++) {
        if (s_fake.slots[i].core == core && s_fake.slots[i].generation == generation &&
            s_fake.slots[i].state != DRV_SLOT_ABSENT) {
            return &s_fake.slots[i];
        }
    }
    return NULL;
}

static slot_t *s_put(int core, int64_t generation, drv_slot_state_t state)
{
    slot_t *slot = &s_fake.slots[s_fake.count++];
    *slot = (slot_t){.core = core, .generation = generation, .state = state};
    snprintf(slot->id, sizeof slot->id, "p@%lld#%d", (long long)generation, core);
    return slot;
}

static drv_slot_view_t s_observe(void *ctx, int core, int64_t generation)
{
    (void)ctx;
    slot_t *slot = s_slot(core, generation);
    return slot ? (drv_slot_view_t){slot->state, slot->id, slot->detail} : (drv_slot_view_t){DRV_SLOT_ABSENT, "", ""};
}

static void s_start(void *ctx, int core, int64_t generation)
{
    (void)ctx;
    s_log("start:%d@%lld ", core, (long long)generation);
    s_put(core, generation, DRV_SLOT_STARTING);
}

static void s_retire(void *ctx, int core, int64_t generation)
{
    (void)ctx;
    s_log("retire:%d@%lld ", core, (long long)generation);
    slot_t *slot = s_slot(core, generation);
    slot->state = s_fake.retire_removes ? DRV_SLOT_ABSENT : DRV_SLOT_STOPPING;
}

static void s_close(void *ctx)
{
    (void)ctx;
    s_log("close ");
}

static void s_note(void *ctx, const drv_step_t *step, drv_step_phase_t phase, const drv_slot_view_t *slot)
{
    (void)ctx;
    (void)slot;
    if (phase == DRV_STEP_DONE) {
        s_log("[%s:%d] ", drv_op_name(step->op), step->core);
    }
}

//  The canary's verdict, as the test sets it: WAIT until s_hold_until, then s_hold_result.
static int s_hold_result = DRV_EXEC_DONE;
static int64_t s_hold_until;

static int s_hold(void *ctx, const drv_step_t *step, int64_t now, int64_t *wake, char *why, size_t whylen)
{
    (void)ctx;
    (void)step;
    if (now < s_hold_until) {
        *wake = s_hold_until;
        return DRV_EXEC_WAIT;
    }
    if (s_hold_result == DRV_EXEC_FAILED) {
        snprintf(why, whylen, "canary failed");
    }
    return s_hold_result;
}

static const drv_effects_t s_fx = {NULL, s_observe, s_start, s_retire, s_close, s_note, s_hold};

static int s_setup(void **state)
{
    (void)state;
    memset(&s_fake, 0, sizeof s_fake);
    memset(&s_plan, 0, sizeof s_plan);
    memset(&s_exec, 0, sizeof s_exec);
    return 0;
}

static int s_teardown(void **state)
{
    (void)state;
    drv_executor_end(&s_exec);
    drv_plan_clear(&s_plan);
    json_decref(s_old_spec);
    json_decref(s_new_spec);
    s_old_spec = s_new_spec = NULL;
    return 0;
}

static const int CORES_01[] = {0, 1};

//  Generation 1 serves core 0 (s_observed); plans and begins its replace.
static void s_begin_replace(int64_t step_timeout_ms)
{
    s_old_spec = json_pack("{s:{}, s:i}", "nodes", "v", 1);
    s_new_spec = json_pack("{s:{}, s:i}", "nodes", "v", 2);
    s_observed =
        (drv_observed_t){.running = true, .spec = s_old_spec, .generation = 1, .cores = &s_core0, .core_count = 1};
    s_put(0, 1, DRV_SLOT_READY);
    drv_plan_make(s_new_spec, &s_core0, 1, &s_observed, &s_plan);
    drv_executor_begin(&s_exec, &s_plan, step_timeout_ms);
}

//  Plans the create of one core and begins it.
static void s_begin_create(int core, int64_t step_timeout_ms)
{
    drv_observed_t none = {.running = false};
    json_t *spec = json_pack("{s:{}}", "nodes");
    drv_plan_make(spec, &core, 1, &none, &s_plan);
    json_decref(spec);
    drv_executor_begin(&s_exec, &s_plan, step_timeout_ms);
}

//  A create starts every core at once, then waits for each to be READY.
static void test_create_starts_every_core_then_waits_for_each(void **state)
{
    (void)state;
    drv_observed_t none = {.running = false};
    json_t *spec = json_pack("{s:{}}", "nodes");
    drv_plan_make(spec, CORES_01, 2, &none, &s_plan);
    drv_executor_begin(&s_exec, &s_plan, 5000);
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 1000), DRV_EXEC_WAIT);
    assert_string_equal(s_fake.log, "start:0@1 [start:0] start:1@1 [start:1] ");
    assert_int_equal(s_exec.deadline_ms, 6000); // from its instance's start
    s_slot(1, 1)->state = DRV_SLOT_READY;       // core 1 first: the executor still waits on core 0
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 2000), DRV_EXEC_WAIT);
    s_slot(0, 1)->state = DRV_SLOT_READY;
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 3000), DRV_EXEC_DONE);
    assert_string_equal(s_fake.log, "start:0@1 [start:0] start:1@1 [start:1] [wait_ready:0] [wait_ready:1] "
                                    "[switch:0] [switch:1] ");
    assert_int_equal(s_exec.next, s_plan.count);
    json_decref(spec);
}

//  A replace on one core: start N+1, wait, switch, drain N and wait until gone.
static void test_replace_drains_the_old_instance_and_waits_until_it_is_gone(void **state)
{
    (void)state;
    s_begin_replace(5000);
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 0), DRV_EXEC_WAIT);
    s_slot(0, 2)->state = DRV_SLOT_READY;
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 10), DRV_EXEC_WAIT); // draining generation 1
    assert_int_equal(s_slot(0, 1)->state, DRV_SLOT_STOPPING);
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 20), DRV_EXEC_WAIT); // asked once, still there
    s_slot(0, 1)->state = DRV_SLOT_ABSENT;                                 // it exited
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 30), DRV_EXEC_DONE);
    assert_string_equal(s_fake.log, "start:0@2 [start:0] [wait_ready:0] [switch:0] retire:0@1 [drain:0] ");
}

//  wait_ready fails at its deadline, naming the core, the generation and why.
static void test_wait_ready_fails_at_the_deadline_with_the_reason(void **state)
{
    (void)state;
    s_begin_create(0, 2000);
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 100), DRV_EXEC_WAIT);
    snprintf(s_slot(0, 1)->detail, sizeof s_slot(0, 1)->detail, "cannot bind");
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 2099), DRV_EXEC_WAIT);
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 2100), DRV_EXEC_FAILED);
    assert_int_equal(s_plan.steps[s_exec.next].op, DRV_OP_WAIT_READY);
    assert_string_equal(s_exec.why, "core 0: generation 1 not ready within 2 s: cannot bind");
}

//  A crash with a restart scheduled is waited for; one for good fails the step.
static void test_wait_ready_waits_for_a_restart_but_fails_on_an_exit(void **state)
{
    (void)state;
    s_begin_create(3, 60000);
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 0), DRV_EXEC_WAIT);
    s_slot(3, 1)->state = DRV_SLOT_RESTARTING;
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 10), DRV_EXEC_WAIT);
    s_slot(3, 1)->state = DRV_SLOT_FAILED;
    snprintf(s_slot(3, 1)->detail, sizeof s_slot(3, 1)->detail, "exited with code 2");
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 20), DRV_EXEC_FAILED);
    assert_string_equal(s_exec.why, "core 3: generation 1 instance exited before ready: exited with code 2");
}

//  A shutdown closes the front doors first, retires every instance at once,
//  then waits for each; one that was not running goes at once.
static void test_shutdown_closes_retires_all_at_once_then_waits(void **state)
{
    (void)state;
    s_put(0, 4, DRV_SLOT_READY);
    s_put(1, 4, DRV_SLOT_READY);
    drv_slot_t slots[] = {{0, 4}, {1, 4}};
    drv_plan_shutdown(slots, 2, 4, false, &s_plan);
    assert_int_equal(s_plan.action, DRV_ACTION_SHUTDOWN);
    drv_executor_begin(&s_exec, &s_plan, 0);
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 0), DRV_EXEC_WAIT);
    assert_string_equal(s_fake.log, "close [close:-1] retire:0@4 retire:1@4 ");
    s_slot(1, 4)->state = DRV_SLOT_ABSENT; // core 1 exits first
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 5), DRV_EXEC_WAIT);
    s_slot(0, 4)->state = DRV_SLOT_ABSENT;
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 9), DRV_EXEC_DONE);
    assert_string_equal(s_fake.log, "close [close:-1] retire:0@4 retire:1@4 [wait_gone:0] [wait_gone:1] ");
}

//  A delete of a pipeline with no instance is one step: close.
static void test_delete_with_nothing_running_is_done_at_once(void **state)
{
    (void)state;
    drv_plan_shutdown(NULL, 0, 0, true, &s_plan);
    assert_int_equal(s_plan.action, DRV_ACTION_DELETE);
    drv_executor_begin(&s_exec, &s_plan, 0);
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 0), DRV_EXEC_DONE);
    assert_string_equal(s_fake.log, "close [close:-1] ");
}

//  A slot that is already stopping is not retired twice; one retired at once
//  (nothing ran) lets the plan go on in the same run.
static void test_retire_is_asked_once_and_a_slot_gone_at_once_does_not_wait(void **state)
{
    (void)state;
    s_put(0, 2, DRV_SLOT_STOPPING);
    s_put(1, 2, DRV_SLOT_RESTARTING);
    s_fake.retire_removes = true;
    drv_slot_t slots[] = {{0, 2}, {1, 2}};
    drv_plan_shutdown(slots, 2, 2, false, &s_plan);
    drv_executor_begin(&s_exec, &s_plan, 0);
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 0), DRV_EXEC_WAIT);
    assert_string_equal(s_fake.log, "close [close:-1] retire:1@2 ");
    s_slot(0, 2)->state = DRV_SLOT_ABSENT;
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 1), DRV_EXEC_DONE);
}

//  A rollback plan runs on the same executor: the new instance stops, the
//  old one is back and ready before the rollout ends.
static void test_a_rollback_plan_runs_on_the_same_executor(void **state)
{
    (void)state;
    s_begin_replace(1000);
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 0), DRV_EXEC_WAIT);
    s_slot(0, 2)->state = DRV_SLOT_FAILED;
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 1), DRV_EXEC_FAILED);
    drv_plan_t back = {0};
    drv_plan_rollback(&s_plan, s_exec.next, &s_observed, &back);
    s_fake.log[0] = 0;
    drv_executor_begin(&s_exec, &back, 1000);
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 2), DRV_EXEC_WAIT);
    s_slot(0, 2)->state = DRV_SLOT_ABSENT;
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 3), DRV_EXEC_DONE);
    assert_string_equal(s_fake.log, "retire:0@2 [stop:0] ");
    assert_int_equal(s_slot(0, 1)->state, DRV_SLOT_READY); // untouched
    drv_executor_end(&s_exec);
    drv_plan_clear(&back);
}

//  A canary: switch core 0, hold until the verdict, then the rest; a failed
//  verdict fails the hold step.
static void test_hold_waits_for_the_verdict(void **state)
{
    (void)state;
    s_begin_replace(1000);
    drv_plan_canary(&s_plan, &s_core0, 1, &s_observed, 1);
    drv_executor_begin(&s_exec, &s_plan, 1000);
    s_hold_until = 500;
    s_hold_result = DRV_EXEC_DONE;
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 0), DRV_EXEC_WAIT);
    s_slot(0, 2)->state = DRV_SLOT_READY;
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 10), DRV_EXEC_WAIT); // holding, both generations serve
    assert_int_equal(s_exec.deadline_ms, 500);
    assert_int_equal(s_slot(0, 1)->state, DRV_SLOT_READY);
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 500), DRV_EXEC_WAIT); // passed: draining generation 1
    assert_string_equal(s_fake.log, "start:0@2 [start:0] [wait_ready:0] [switch:0] [hold:-1] retire:0@1 ");
    //  The same, failing.
    drv_executor_begin(&s_exec, &s_plan, 1000);
    s_fake.count = 0;
    s_put(0, 1, DRV_SLOT_READY);
    s_put(0, 2, DRV_SLOT_READY);
    s_hold_result = DRV_EXEC_FAILED;
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 600), DRV_EXEC_FAILED);
    assert_int_equal(s_plan.steps[s_exec.next].op, DRV_OP_HOLD);
    assert_string_equal(s_exec.why, "canary failed");
    s_hold_result = DRV_EXEC_DONE;
    s_hold_until = 0;
}

//  A pause lets the step under way complete and begins no other until resumed.
static void test_pause_stops_between_steps(void **state)
{
    (void)state;
    s_begin_replace(1000);
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 0), DRV_EXEC_WAIT); // waiting for ready
    s_exec.stop_before_next = true;
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 1), DRV_EXEC_WAIT); // the wait goes on
    s_slot(0, 2)->state = DRV_SLOT_READY;
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 2), DRV_EXEC_PAUSED);
    assert_int_equal(s_plan.steps[s_exec.next].op, DRV_OP_SWITCH);
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 3), DRV_EXEC_PAUSED); // stays paused
    assert_string_equal(s_fake.log, "start:0@2 [start:0] [wait_ready:0] ");
    s_exec.stop_before_next = false;
    assert_int_equal(drv_executor_run(&s_exec, &s_fx, 4), DRV_EXEC_WAIT);
    assert_string_equal(s_fake.log, "start:0@2 [start:0] [wait_ready:0] [switch:0] retire:0@1 ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_starts_every_core_then_waits_for_each, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_replace_drains_the_old_instance_and_waits_until_it_is_gone, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_wait_ready_fails_at_the_deadline_with_the_reason, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_wait_ready_waits_for_a_restart_but_fails_on_an_exit, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_closes_retires_all_at_once_then_waits, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_delete_with_nothing_running_is_done_at_once, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_retire_is_asked_once_and_a_slot_gone_at_once_does_not_wait, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_a_rollback_plan_runs_on_the_same_executor, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_hold_waits_for_the_verdict, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_pause_stops_between_steps, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
