/*  The instance state table with no process: events go in, the record's
    state and deadline and the effects to apply come out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "drv_inst_table.h"

#include <stdio.h>
#include <string.h>

static drv_pipeline_t s_pipeline;
static drv_instance_t s_inst;

//  restart policy: at most 2 restarts in 60 s, backoff 100 ms doubling to 400 ms.
static int s_setup(void **state)
{
    (void)state;
    memset(&s_pipeline, 0, sizeof s_pipeline);
    memset(&s_inst, 0, sizeof s_inst);
    snprintf(s_pipeline.key, sizeof s_pipeline.key, "default:p");
    s_inst.pipeline = &s_pipeline;
    s_inst.spec = json_pack("{s:{s:{s:i, s:i, s:i, s:i}}}", "policies", "restart", "max_restarts", 2, "window_secs", 60,
                            "initial_backoff_ms", 100, "max_backoff_ms", 400);
    snprintf(s_inst.id, sizeof s_inst.id, "default/p@1#0");
    s_inst.state = DRV_INST_STARTING;
    return 0;
}

static int s_teardown(void **state)
{
    (void)state;
    json_decref(s_inst.spec);
    return 0;
}

static unsigned s_step(drv_life_event_t event, int64_t now)
{
    drv_life_input_t in = {.now_ms = now, .pid = 42, .drain_ms = 1000, .reason = "bad config"};
    return drv_inst_table_step(&s_inst, event, &in);
}

static unsigned s_exit(int code, int64_t now, bool engine_stopping)
{
    drv_life_input_t in = {.now_ms = now, .code = code, .engine_stopping = engine_stopping};
    return drv_inst_table_step(&s_inst, DRV_LIFE_EXIT, &in);
}

//  Spawned, HELLO from its pid (the spec goes out), READY: routed, told.
static void s_bring_up(void)
{
    assert_int_equal(s_step(DRV_LIFE_SPAWNED, 0), 0);
    assert_int_equal(s_inst.pid, 42);
    assert_int_equal(s_step(DRV_LIFE_HELLO, 1), DRV_LIFE_FX_SEND_SPEC);
    assert_int_equal(s_step(DRV_LIFE_READY, 2), DRV_LIFE_FX_ROUTE | DRV_LIFE_FX_TELL_READY);
    assert_int_equal(s_inst.state, DRV_INST_READY);
}

static void test_spawn_hello_ready(void **state)
{
    (void)state;
    s_inst.gated = true;
    s_bring_up();
    assert_false(s_inst.gated);                     // ready: its exit is a crash like any other now
    assert_int_equal(s_step(DRV_LIFE_READY, 3), 0); // a second READY means nothing
}

static void test_hello_from_another_pid_is_ignored(void **state)
{
    (void)state;
    s_step(DRV_LIFE_SPAWNED, 0);
    s_inst.pid = 7; // another process said it is this instance
    assert_int_equal(s_step(DRV_LIFE_HELLO, 1), 0);
}

//  retire → drain; drain deadline → SIGTERM; kill deadline → SIGKILL; exit → gone.
static void test_retire_drains_then_terms_then_kills_then_removes(void **state)
{
    (void)state;
    s_bring_up();
    assert_int_equal(s_step(DRV_LIFE_RETIRE, 10), DRV_LIFE_FX_DRAIN);
    int64_t at;
    assert_int_equal(drv_inst_table_deadline(&s_inst, 200, &at), DRV_LIFE_DRAIN_DEADLINE);
    assert_int_equal(at, 1010);
    assert_int_equal(s_step(DRV_LIFE_RETIRE, 11), 0); // asked once
    assert_int_equal(s_step(DRV_LIFE_DRAIN_DEADLINE, 1010), DRV_LIFE_FX_TERM);
    assert_int_equal(drv_inst_table_deadline(&s_inst, 200, &at), DRV_LIFE_KILL_DEADLINE);
    assert_int_equal(at, 1010 + DRV_KILL_GRACE_MS);
    assert_int_equal(s_step(DRV_LIFE_KILL_DEADLINE, at), DRV_LIFE_FX_KILL);
    assert_int_equal(s_exit(137, at + 1, false), DRV_LIFE_FX_UNROUTE | DRV_LIFE_FX_TELL_EXIT | DRV_LIFE_FX_REMOVE);
    assert_int_equal(s_inst.state, DRV_INST_EXITED);
    assert_int_equal(s_inst.restarts, 0); // on purpose: no restart
}

//  Retired before READY: nothing was routed to it, so no drain: SIGTERM.
static void test_retire_while_starting_stops_without_a_drain(void **state)
{
    (void)state;
    s_step(DRV_LIFE_SPAWNED, 0);
    assert_int_equal(s_step(DRV_LIFE_RETIRE, 5), DRV_LIFE_FX_TERM);
    assert_int_equal(s_inst.state, DRV_INST_STOPPING);
    assert_int_equal(s_step(DRV_LIFE_READY, 6), 0); // too late: never routed
    assert_int_equal(s_exit(0, 7, false) & DRV_LIFE_FX_REMOVE, DRV_LIFE_FX_REMOVE);
}

//  A crash restarts at once, then after 100, 200, 400, 400 ms; the third
//  within the window marks the pipeline degraded, once.
static void test_crashes_back_off_and_degrade_the_pipeline_once(void **state)
{
    (void)state;
    int64_t expected[] = {0, 100, 200, 400, 400};
    int64_t now = 1000;
    for (int i = 0; i < 5; i++) {
        s_bring_up();
        unsigned fx = s_exit(128 + 9, now, false);
        assert_int_equal(fx & (DRV_LIFE_FX_UNROUTE | DRV_LIFE_FX_TELL_EXIT),
                         DRV_LIFE_FX_UNROUTE | DRV_LIFE_FX_TELL_EXIT);
        assert_int_equal(fx & DRV_LIFE_FX_DEGRADED, i == 2 ? DRV_LIFE_FX_DEGRADED : 0);
        assert_int_equal(s_inst.state, DRV_INST_FAILED);
        assert_string_equal(s_inst.detail, "killed by signal 9");
        int64_t at;
        assert_int_equal(drv_inst_table_deadline(&s_inst, 200, &at), DRV_LIFE_RESTART_DUE);
        assert_int_equal(at - now, expected[i]);
        assert_int_equal(s_step(DRV_LIFE_RESTART_DUE, at), DRV_LIFE_FX_SPAWN);
        now = at + 10;
    }
    assert_true(s_pipeline.degraded);
    assert_int_equal(s_inst.restarts, 5);
    assert_int_equal(drv_inst_table_recent(&s_inst, now + 61000), 0); // the window has passed
}

//  A gated instance (a rollout waits on it) that exits before READY is not
//  restarted: the rollout decides.
static void test_a_gated_crash_waits_for_the_rollout(void **state)
{
    (void)state;
    s_inst.gated = true;
    s_step(DRV_LIFE_SPAWNED, 0);
    assert_int_equal(s_step(DRV_LIFE_INIT_FAILED, 1), 0);
    assert_string_equal(s_inst.detail, "bad config");
    assert_int_equal(s_exit(2, 2, false) & DRV_LIFE_FX_DEGRADED, 0);
    assert_int_equal(s_inst.state, DRV_INST_FAILED);
    assert_string_equal(s_inst.detail, "bad config"); // the reason it gave, not "exited with code 2"
    int64_t at;
    drv_inst_table_deadline(&s_inst, 200, &at);
    assert_int_equal(at, 0);
    assert_int_equal(s_step(DRV_LIFE_RETIRE, 3), DRV_LIFE_FX_REMOVE); // not running: gone at once
}

//  Three heartbeats missed: SIGKILL, once, with the reason kept.
static void test_missed_heartbeats_kill_it(void **state)
{
    (void)state;
    s_bring_up(); // READY at 2
    int64_t at;
    assert_int_equal(drv_inst_table_deadline(&s_inst, 200, &at), DRV_LIFE_HEARTBEAT_MISSED);
    assert_int_equal(at, 2 + 600 + 1);
    s_step(DRV_LIFE_HEARTBEAT, 500);
    drv_inst_table_deadline(&s_inst, 200, &at);
    assert_int_equal(at, 500 + 600 + 1);
    assert_int_equal(s_step(DRV_LIFE_HEARTBEAT_MISSED, at), DRV_LIFE_FX_KILL);
    assert_string_equal(s_inst.detail, "unhealthy: 3 heartbeats missed");
    s_exit(137, at + 5, false);
    assert_string_equal(s_inst.detail, "killed by signal 9"); // a ready instance's exit says how it ended
}

//  A signal droverd did not send ends a draining or stopping instance (an
//  abort in a library, a fault): a crash, though nothing restarts it. The
//  SIGTERM and SIGKILL droverd sends when it stops one are not.
static void test_an_abort_while_draining_is_a_crash(void **state)
{
    (void)state;
    s_bring_up();
    s_step(DRV_LIFE_RETIRE, 10);
    assert_int_equal(s_exit(128 + 6, 11, false), DRV_LIFE_FX_UNROUTE | DRV_LIFE_FX_TELL_EXIT | DRV_LIFE_FX_REMOVE);
    assert_true(s_inst.crashed);
    assert_int_equal(s_inst.restarts, 1);
    assert_int_equal(s_pipeline.crashes, 1);
    assert_string_equal(s_inst.detail, "killed by signal 6 while draining");
    //  Drained and exited 0, or stopped by droverd's SIGTERM / SIGKILL: as asked.
    int asked[][2] = {{DRV_INST_DRAINING, 0}, {DRV_INST_STOPPING, 128 + 15}, {DRV_INST_STOPPING, 128 + 9}};
    for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++) {
        s_inst.state = (drv_inst_state_t)asked[i][0];
        s_inst.crashed = false;
        s_exit(asked[i][1], 20, false);
        assert_false(s_inst.crashed);
    }
    s_inst.state = DRV_INST_STOPPING; // a fault while stopping is one
    s_exit(128 + 11, 30, false);
    assert_true(s_inst.crashed);
    assert_int_equal(s_pipeline.crashes, 2);
    s_inst.state = DRV_INST_DRAINING; // droverd stopping: its own signals reach the tree
    s_inst.crashed = false;
    s_exit(128 + 9, 40, true);
    assert_false(s_inst.crashed);
}

//  droverd stopping: an exit is never a crash.
static void test_an_exit_while_droverd_stops_is_not_a_crash(void **state)
{
    (void)state;
    s_bring_up();
    assert_int_equal(s_exit(0, 5, true) & DRV_LIFE_FX_REMOVE, DRV_LIFE_FX_REMOVE);
    assert_int_equal(s_inst.restarts, 0);
}

//  Events that mean nothing in a state change nothing: a gone instance
//  hears nothing; a late or stray event does not bring one back.
static void test_events_a_state_does_not_know_change_nothing(void **state)
{
    (void)state;
    struct {
        drv_inst_state_t state;
        drv_life_event_t event;
    } ignored[] = {
        {DRV_INST_READY, DRV_LIFE_SPAWNED},
        {DRV_INST_READY, DRV_LIFE_RESTART_DUE},
        {DRV_INST_READY, DRV_LIFE_KILL_DEADLINE},
        {DRV_INST_DRAINING, DRV_LIFE_READY},
        {DRV_INST_DRAINING, DRV_LIFE_RETIRE},
        {DRV_INST_DRAINING, DRV_LIFE_HEARTBEAT_MISSED},
        {DRV_INST_STOPPING, DRV_LIFE_RETIRE},
        {DRV_INST_STOPPING, DRV_LIFE_READY},
        {DRV_INST_STOPPING, DRV_LIFE_DRAIN_DEADLINE},
        {DRV_INST_FAILED, DRV_LIFE_EXIT},
        {DRV_INST_FAILED, DRV_LIFE_READY},
        {DRV_INST_STARTING, DRV_LIFE_RESTART_DUE},
    };
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
        s_inst.state = ignored[i].state;
        drv_instance_t before = s_inst;
        assert_int_equal(s_step(ignored[i].event, 100), 0);
        assert_memory_equal(&before, &s_inst, sizeof before);
    }
    for (drv_life_event_t ev = 0; ev < DRV_LIFE_EVENTS; ev++) {
        s_inst.state = DRV_INST_EXITED;
        drv_instance_t before = s_inst;
        assert_int_equal(s_step(ev, 100), 0);
        assert_memory_equal(&before, &s_inst, sizeof before);
        assert_string_not_equal(drv_life_event_name(ev), "?");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_spawn_hello_ready, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_hello_from_another_pid_is_ignored, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_retire_drains_then_terms_then_kills_then_removes, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_retire_while_starting_stops_without_a_drain, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_crashes_back_off_and_degrade_the_pipeline_once, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_a_gated_crash_waits_for_the_rollout, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_missed_heartbeats_kill_it, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_an_abort_while_draining_is_a_crash, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_an_exit_while_droverd_stops_is_not_a_crash, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_events_a_state_does_not_know_change_nothing, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
