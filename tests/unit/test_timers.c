/*  drv_timers: the heap gives timers back in due order whatever the order
    they were set, moved and cancelled in (checked against a plain scan). */
#include "drover/drv_timers.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#define N 500

static void test_pops_in_due_order_after_random_sets_moves_and_cancels(void **state)
{
    (void)state;
    drv_timers_t *timers = drv_timers_new();
    static drv_timer_t t[N];
    static bool live[N];
    srand(7);
    for (int round = 0; round < 20000; round++) {
        int i = rand() % N;
        int what = rand() % 4;
        if (what < 3) {
            assert_int_equal(drv_timers_set(timers, &t[i], rand() % 100000), 0);
            live[i] = true;
        } else {
            drv_timers_cancel(timers, &t[i]);
            live[i] = false;
        }
        assert_int_equal(drv_timers_armed(&t[i]), live[i]);
    }
    size_t count = 0;
    int64_t earliest = -1;
    for (int i = 0; i < N; i++) {
        if (live[i]) {
            count++;
            earliest = earliest < 0 || t[i].due < earliest ? t[i].due : earliest;
        }
    }
    assert_int_equal(drv_timers_count(timers), count);
    assert_int_equal(drv_timers_next(timers), earliest);
    assert_null(drv_timers_pop(timers, earliest - 1)); // nothing is due before the earliest
    int64_t last = -1;
    size_t popped = 0;
    drv_timer_t *timer;
    while ((timer = drv_timers_pop(timers, INT64_MAX))) {
        assert_true(timer->due >= last);
        assert_false(drv_timers_armed(timer));
        assert_true(live[timer - t]);
        live[timer - t] = false;
        last = timer->due;
        popped++;
    }
    assert_int_equal(popped, count);
    assert_int_equal(drv_timers_next(timers), -1);
    drv_timers_destroy(&timers);
}

static void test_a_due_timer_pops_and_a_later_one_waits(void **state)
{
    (void)state;
    drv_timers_t *timers = drv_timers_new();
    drv_timer_t a = {0}, b = {0};
    drv_timers_set(timers, &a, 100);
    drv_timers_set(timers, &b, 50);
    drv_timers_set(timers, &b, 200); // moved later
    assert_int_equal(drv_timers_next(timers), 100);
    assert_ptr_equal(drv_timers_pop(timers, 150), &a);
    assert_null(drv_timers_pop(timers, 150));
    assert_ptr_equal(drv_timers_pop(timers, 200), &b);
    drv_timers_destroy(&timers);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pops_in_due_order_after_random_sets_moves_and_cancels),
        cmocka_unit_test(test_a_due_timer_pops_and_a_later_one_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
