/*  The broker's instance table: credit accounting and round-robin picking. */
#include "drv_instances.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

static void test_credit_reset_synced_and_returned(void **state)
{
    (void)state;
    drv_instances_t *table = drv_instances_new();
    drv_instance_t *inst = drv_instances_get(table, "i1");
    assert_false(inst->credit_known);
    drv_instance_credit(inst, 3, false, false, 0, 0); // credit meant for the broker before us
    assert_false(inst->credit_known);
    assert_int_equal(inst->credit, 0);
    drv_instance_credit(inst, 8, true, false, 0, 0); // a new process: its window
    assert_int_equal(inst->credit, 8);
    assert_true(inst->credit_known);
    drv_instance_credit(inst, 3, false, false, 0, 0); // three exported
    assert_int_equal(inst->credit, 11);
    //  The answer to a SYNC with 5 batches in flight: they use the window.
    drv_instance_credit(inst, 8, true, true, 0, 5);
    assert_int_equal(inst->credit, 3);
    drv_instance_credit(inst, 8, true, true, 0, 20);
    assert_int_equal(inst->credit, 0);
    drv_instances_destroy(&table);
    drv_instances_destroy(&table);
}

static void test_serves_only_its_pipeline_and_nodes(void **state)
{
    (void)state;
    drv_instances_t *table = drv_instances_new();
    drv_instance_t *inst = drv_instances_get(table, "i1");
    drv_instance_credit(inst, 1, true, false, 0, 0);
    assert_false(drv_instance_serves(inst, "g:p", "in")); // not routed yet
    json_t *nodes = json_pack("[s]", "in");
    drv_instance_route(inst, "g:p", nodes);
    json_decref(nodes);
    assert_true(drv_instance_serves(inst, "g:p", "in"));
    assert_false(drv_instance_serves(inst, "g:p", "other"));
    assert_false(drv_instance_serves(inst, "g:q", "in"));
    inst->credit = 0;
    assert_false(drv_instances_serving(table, "g:p", "in"));
    inst->credit = 1;
    inst->deleted_at_ms = 1;
    assert_null(drv_instances_pick(table, "g:p", "in"));
    inst->deleted_at_ms = 0;
    drv_instance_unroute(inst);
    assert_false(drv_instance_serves(inst, "g:p", "in"));
    drv_instances_destroy(&table);
}

//  A failed send unroutes an instance; it is SYNCed until it answers, and
//  its answer routes it again (else an idle one stays unrouted for good).
static void test_unrouted_by_a_failed_send_is_synced_and_routed_again(void **state)
{
    (void)state;
    drv_instances_t *table = drv_instances_new();
    drv_instance_t *inst = drv_instances_get(table, "i1");
    drv_instance_route(inst, "g:p", NULL);
    assert_true(drv_instance_wants_sync(inst, 0)); // no credit from it yet
    drv_instance_credit(inst, 16, true, false, 0, 0);
    assert_false(drv_instance_wants_sync(inst, 0));
    assert_true(drv_instance_serves(inst, "g:p", "in"));
    drv_instance_unroute(inst);
    assert_false(drv_instance_serves(inst, "g:p", "in"));
    assert_true(inst->resync);
    assert_true(drv_instance_wants_sync(inst, 0));
    inst->next_sync_ms = 100; // sent once: retried after the interval
    assert_false(drv_instance_wants_sync(inst, 99));
    assert_true(drv_instance_wants_sync(inst, 100));
    drv_instance_credit(inst, 16, true, true, 0, 0); // its answer
    assert_true(drv_instance_serves(inst, "g:p", "in"));
    assert_int_equal(inst->credit, 16);
    assert_false(drv_instance_wants_sync(inst, 1000));
    inst->deleted_at_ms = 5; // gone: never synced
    drv_instance_unroute(inst);
    assert_false(drv_instance_wants_sync(inst, 1000));
    drv_instances_destroy(&table);
}

//  A SYNC it took and its own first credit crossed (a new process behind
//  an unrouted id, or a new instance routed before its first credit came):
//  only the answer to the last SYNC it took sets its credit, and nothing is
//  sent to it until then, since batches written to its ring meanwhile
//  could reach it before the SYNC does (docs/architecture.md, "The data
//  ring"). Before, its answer counted those as in flight for good, and a
//  window's worth of them stopped it.
static void test_a_sync_it_took_is_answered_before_it_is_fed(void **state)
{
    (void)state;
    drv_instances_t *table = drv_instances_new();
    drv_instance_t *inst = drv_instances_get(table, "i1");
    drv_instance_route(inst, "g:p", NULL);
    assert_true(drv_instance_wants_sync(inst, 0));
    drv_instance_sync_sent(inst, 1, false, 0); // no pipe to it yet: again in SYNC_RETRY_MS
    assert_int_equal(inst->sync_awaited, 0);
    assert_false(drv_instance_wants_sync(inst, SYNC_RETRY_MS - 1));
    assert_true(drv_instance_wants_sync(inst, SYNC_RETRY_MS));
    drv_instance_sync_sent(inst, 2, true, 100); // its pipe took it
    assert_int_equal(inst->sync_awaited, 2);
    drv_instance_credit(inst, 64, true, false, 0, 0); // its first credit, crossing the SYNC
    assert_false(drv_instance_serves(inst, "g:p", "in"));
    assert_false(drv_instance_wants_sync(inst, 100 + SYNC_ANSWER_MS - 1));
    drv_instance_credit(inst, 64, true, true, 1, 0); // the answer to an older SYNC
    assert_false(drv_instance_serves(inst, "g:p", "in"));
    drv_instance_credit(inst, 64, true, true, 2, inst->sent_since_sync); // the answer to the last
    assert_true(drv_instance_serves(inst, "g:p", "in"));
    assert_int_equal(inst->credit, 64);
    assert_int_equal(inst->sync_awaited, 0);
    assert_false(drv_instance_wants_sync(inst, 100000));

    //  One unanswered for a second goes again under a new number (a
    //  reconnect may have lost it); an answer naming no SYNC (an older
    //  worker) answers the one awaited.
    drv_instance_unroute(inst);
    drv_instance_sync_sent(inst, 3, true, 200);
    assert_true(drv_instance_wants_sync(inst, 200 + SYNC_ANSWER_MS));
    drv_instance_sync_sent(inst, 4, true, 200 + SYNC_ANSWER_MS);
    drv_instance_credit(inst, 32, true, true, 3, 0);
    assert_false(drv_instance_serves(inst, "g:p", "in"));
    drv_instance_credit(inst, 32, true, true, 0, 0);
    assert_true(drv_instance_serves(inst, "g:p", "in"));
    assert_int_equal(inst->credit, 32);

    //  A new process under its id (INSTANCE_ADD) or a failed send (its pipe
    //  gone): the SYNC the old pipe took is never answered, so none is awaited.
    drv_instance_unroute(inst);
    drv_instance_sync_sent(inst, 5, true, 5000);
    drv_instance_route(inst, "g:p", NULL);
    assert_int_equal(inst->sync_awaited, 0);
    drv_instance_sync_sent(inst, 6, true, 5000);
    drv_instance_unroute(inst);
    assert_int_equal(inst->sync_awaited, 0);
    assert_true(drv_instance_wants_sync(inst, 5000));
    drv_instances_destroy(&table);
}

static void test_pick_is_round_robin(void **state)
{
    (void)state;
    drv_instances_t *table = drv_instances_new();
    const char *ids[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        drv_instance_t *inst = drv_instances_get(table, ids[i]);
        drv_instance_route(inst, "g:p", NULL);
        drv_instance_credit(inst, 100, true, false, 0, 0);
    }
    int picked[3] = {0};
    for (int k = 0; k < 30; k++) {
        drv_instance_t *inst = drv_instances_pick(table, "g:p", "in");
        assert_non_null(inst);
        picked[inst->id[0] - 'a']++;
    }
    assert_int_equal(picked[0], 10);
    assert_int_equal(picked[1], 10);
    assert_int_equal(picked[2], 10);
    drv_instances_destroy(&table);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_credit_reset_synced_and_returned),
        cmocka_unit_test(test_serves_only_its_pipeline_and_nodes),
        cmocka_unit_test(test_unrouted_by_a_failed_send_is_synced_and_routed_again),
        cmocka_unit_test(test_a_sync_it_took_is_answered_before_it_is_fed),
        cmocka_unit_test(test_pick_is_round_robin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
