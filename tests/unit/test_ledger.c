/*  The broker's delivery ledger: the guarantees listed in drv_ledger.h. */
#include "drv_ledger.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

static drv_route_t *s_route(const char *node)
{
    zframe_t *header = zframe_new("H", 1);
    drv_route_t *route = drv_route_new("g:p", node, "ipc:///tmp/x", header);
    zframe_destroy(&header);
    return route;
}

//  A batch whose payload is `text` (its bytes are its name in the tests).
static drv_pending_t *s_batch(drv_route_t *route, const char *text, const char *producer)
{
    zmq_msg_t payload;
    zmq_msg_init_size(&payload, strlen(text));
    memcpy(zmq_msg_data(&payload), text, strlen(text));
    drv_pending_t from = {0};
    if (producer) {
        from.reply_to = zframe_new(producer, strlen(producer));
        from.msg_id = zframe_new("1", 1);
    }
    drv_pending_t *pending = drv_pending_new(route, &payload, producer ? &from : NULL);
    zframe_destroy(&from.reply_to);
    zframe_destroy(&from.msg_id);
    zmq_msg_close(&payload);
    return pending;
}

static bool s_is(const drv_pending_t *pending, const char *text)
{
    zmq_msg_t *payload = (zmq_msg_t *)&pending->payload;
    return zmq_msg_size(payload) == strlen(text) && !memcmp(zmq_msg_data(payload), text, strlen(text));
}

typedef struct {
    char seen[16][16]; // payloads acknowledged, in order
    int count;
    int answered; // of which had a producer to answer
} acks_t;

static void s_done(const drv_pending_t *pending, void *arg)
{
    acks_t *acks = arg;
    zmq_msg_t *payload = (zmq_msg_t *)&pending->payload;
    snprintf(acks->seen[acks->count++], 16, "%.*s", (int)zmq_msg_size(payload), (char *)zmq_msg_data(payload));
    acks->answered += pending->reply_to != NULL;
}

static void s_send(drv_ledger_t *ledger, const char *id, drv_route_t *route, const char *text, const char *producer)
{
    drv_pending_t *pending = s_batch(route, text, producer);
    drv_ledger_sent(ledger, id, &pending);
    assert_null(pending);
}

static void test_acks_release_oldest_first_exactly_as_many(void **state)
{
    (void)state;
    drv_ledger_t *ledger = drv_ledger_new();
    drv_route_t *route = s_route("in");
    drv_ledger_open(ledger, "i1");
    s_send(ledger, "i1", route, "a", "prod");
    s_send(ledger, "i1", route, "bb", NULL);
    s_send(ledger, "i1", route, "ccc", NULL);
    assert_int_equal(drv_ledger_unacked(ledger, "i1"), 3);
    assert_int_equal(route->held_bytes, 6);

    acks_t acks = {0};
    drv_ledger_acked(ledger, "i1", 2, s_done, &acks);
    assert_int_equal(acks.count, 2);
    assert_string_equal(acks.seen[0], "a");
    assert_string_equal(acks.seen[1], "bb");
    assert_int_equal(acks.answered, 1);
    assert_int_equal(drv_ledger_unacked(ledger, "i1"), 1);
    assert_int_equal(route->held_bytes, 3);

    //  More acks than batches, or for an unknown instance: nothing else moves.
    drv_ledger_acked(ledger, "i1", 5, s_done, &acks);
    drv_ledger_acked(ledger, "nobody", 5, s_done, &acks);
    assert_int_equal(acks.count, 3);
    assert_string_equal(acks.seen[2], "ccc");
    assert_int_equal(route->held_bytes, 0);
    assert_int_equal(drv_ledger_parked(ledger), 0);
    drv_ledger_destroy(&ledger);
    drv_ledger_destroy(&ledger); // safe twice
    drv_route_unref(&route);
}

static void test_orphaned_batches_wait_oldest_first(void **state)
{
    (void)state;
    drv_ledger_t *ledger = drv_ledger_new();
    drv_route_t *route = s_route("in");
    drv_ledger_open(ledger, "i1");
    s_send(ledger, "i1", route, "a", NULL);
    s_send(ledger, "i1", route, "b", NULL);
    s_send(ledger, "i1", route, "c", NULL);
    drv_ledger_acked(ledger, "i1", 1, NULL, NULL);
    assert_int_equal(drv_ledger_orphan(ledger, "i1"), 2);
    assert_int_equal(drv_ledger_unacked(ledger, "i1"), 0);
    assert_int_equal(drv_ledger_parked(ledger), 2);
    //  Still held: they are not delivered yet.
    assert_int_equal(route->held_bytes, 2);
    assert_int_equal(drv_ledger_orphan(ledger, "unknown"), 0);
    drv_ledger_destroy(&ledger);
    assert_int_equal(route->held_bytes, 0);
    drv_route_unref(&route);
}

static void test_clean_drain_hands_nothing_over(void **state)
{
    (void)state;
    drv_ledger_t *ledger = drv_ledger_new();
    drv_route_t *route = s_route("in");
    drv_ledger_open(ledger, "i1");
    s_send(ledger, "i1", route, "a", NULL);
    drv_ledger_drained(ledger, "i1");
    assert_int_equal(drv_ledger_unacked(ledger, "i1"), 0);
    s_send(ledger, "i1", route, "late", NULL); // cannot happen after DRAINED; still not redelivered
    assert_int_equal(drv_ledger_orphan(ledger, "i1"), 0);
    assert_int_equal(drv_ledger_parked(ledger), 0);

    //  A new incarnation under the same id is accountable again.
    drv_ledger_open(ledger, "i1");
    s_send(ledger, "i1", route, "b", NULL);
    drv_ledger_forget(ledger, "i1");
    assert_int_equal(drv_ledger_parked(ledger), 1);
    assert_int_equal(drv_ledger_unacked(ledger, "i1"), 0);
    drv_ledger_destroy(&ledger);
    drv_route_unref(&route);
}

typedef struct {
    const char *refuse;  // payload whose route has no instance now (0)
    const char *fail_at; // payload whose send fails (-1)
    char taken[16][16];
    int count;
} deliver_t;

static int s_deliver(drv_pending_t *pending, void *arg)
{
    deliver_t *d = arg;
    if (d->refuse && s_is(pending, d->refuse)) {
        return 0;
    }
    if (d->fail_at && s_is(pending, d->fail_at)) {
        return -1;
    }
    zmq_msg_t *payload = &pending->payload;
    snprintf(d->taken[d->count++], 16, "%.*s", (int)zmq_msg_size(payload), (char *)zmq_msg_data(payload));
    return 1;
}

static void test_redelivery_keeps_order_and_what_nobody_took(void **state)
{
    (void)state;
    drv_ledger_t *ledger = drv_ledger_new();
    drv_route_t *route = s_route("in");
    const char *names[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) {
        drv_pending_t *pending = s_batch(route, names[i], NULL);
        drv_ledger_park(ledger, &pending);
        assert_null(pending);
    }
    //  "b" has no instance now: skipped, kept; "d" fails: kept, stops there.
    deliver_t d = {.refuse = "b", .fail_at = "d"};
    assert_int_equal(drv_ledger_redeliver(ledger, s_deliver, &d), 2);
    assert_string_equal(d.taken[0], "a");
    assert_string_equal(d.taken[1], "c");
    assert_int_equal(drv_ledger_parked(ledger), 2);
    assert_int_equal(route->held_bytes, 2);

    deliver_t again = {0};
    assert_int_equal(drv_ledger_redeliver(ledger, s_deliver, &again), 2);
    assert_string_equal(again.taken[0], "b");
    assert_string_equal(again.taken[1], "d");
    assert_int_equal(drv_ledger_parked(ledger), 0);
    assert_int_equal(route->held_bytes, 0);
    drv_ledger_destroy(&ledger);
    drv_route_unref(&route);
}

static void test_route_outlives_its_front_door(void **state)
{
    (void)state;
    drv_ledger_t *ledger = drv_ledger_new();
    drv_route_t *route = s_route("in");
    drv_route_t *front_door = route; // the front door's reference
    s_send(ledger, "i1", route, "abc", "prod");
    drv_route_unref(&front_door); // front door closed while the batch is unacked
    assert_null(front_door);
    acks_t acks = {0};
    drv_ledger_acked(ledger, "i1", 1, s_done, &acks);
    assert_int_equal(acks.answered, 1);
    drv_ledger_destroy(&ledger);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acks_release_oldest_first_exactly_as_many),
        cmocka_unit_test(test_orphaned_batches_wait_oldest_first),
        cmocka_unit_test(test_clean_drain_hands_nothing_over),
        cmocka_unit_test(test_redelivery_keeps_order_and_what_nobody_took),
        cmocka_unit_test(test_route_outlives_its_front_door),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
