/*  drv_op_end: each listener is told once, in either way an operation can
    end; one that stopped listening is not told; a listener may stop
    listening (or others may start) while the end is being told. */
#include "drv_op_end.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

typedef struct {
    int ended, discarded;
    drv_op_listeners_t *also_add_to; // while told: listens again (to a later operation)
} seen_t;

static void s_told(void *arg, drv_op_end_t how)
{
    seen_t *seen = arg;
    if (how == DRV_OP_ENDED) {
        seen->ended++;
    } else {
        seen->discarded++;
    }
    if (seen->also_add_to) {
        drv_op_listeners_add(seen->also_add_to, s_told, seen);
        seen->also_add_to = NULL;
    }
}

static void test_each_listener_is_told_once(void **state)
{
    (void)state;
    drv_op_listeners_t *op = drv_op_listeners_new();
    seen_t a = {0}, b = {0}, c = {0};
    drv_op_listeners_add(op, s_told, &a);
    drv_op_listeners_add(op, s_told, &b);
    drv_op_listeners_add(op, s_told, &c);
    drv_op_listeners_remove(op, &b); // its request's time ran out
    drv_op_listeners_fire(op, DRV_OP_ENDED);
    drv_op_listeners_fire(op, DRV_OP_ENDED); // told once only
    assert_int_equal(a.ended, 1);
    assert_int_equal(b.ended, 0);
    assert_int_equal(c.ended, 1);
    assert_int_equal(drv_op_listeners_size(op), 0);
    drv_op_listeners_destroy(&op);
    assert_int_equal(a.discarded + b.discarded + c.discarded, 0);
}

static void test_discarded_before_the_end_tells_who_still_listens(void **state)
{
    (void)state;
    drv_op_listeners_t *op = drv_op_listeners_new();
    drv_op_listeners_t *next = drv_op_listeners_new();
    seen_t a = {.also_add_to = next};
    drv_op_listeners_add(op, s_told, &a);
    drv_op_listeners_destroy(&op);
    assert_null(op);
    assert_int_equal(a.discarded, 1);
    assert_int_equal(drv_op_listeners_size(next), 1); // added while being told
    drv_op_listeners_fire(next, DRV_OP_ENDED);
    assert_int_equal(a.ended, 1);
    drv_op_listeners_destroy(&next);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_listener_is_told_once),
        cmocka_unit_test(test_discarded_before_the_end_tells_who_still_listens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
