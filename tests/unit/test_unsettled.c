/*  drv_unsettled: the broker's batches an instance holds until they settle. */
#include "drv_unsettled.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

static void test_batches_settle_in_order_from_the_front(void **state)
{
    (void)state;
    drv_unsettled_t list = {0};
    for (int64_t input = 1; input <= 5; input++) {
        drv_unsettled_push(&list, input);
    }
    assert_int_equal(drv_unsettled_settle(&list, 0), 0);
    assert_int_equal(drv_unsettled_settle(&list, 2), 2);
    assert_int_equal(drv_unsettled_count(&list), 3);
    drv_unsettled_push(&list, 5); // junk or a filtered batch: the same input as the last, settled with it
    assert_int_equal(drv_unsettled_settle(&list, 5), 4);
    assert_int_equal(drv_unsettled_count(&list), 0);
    drv_unsettled_free(&list);
}

//  A backlog of 100,000 held while more come and the front settles: what is
//  held is always exactly what was pushed and not settled, in order.
static void test_a_long_backlog_keeps_its_order_through_compaction(void **state)
{
    (void)state;
    drv_unsettled_t list = {0};
    int64_t next = 1, settled = 0;
    for (int round = 0; round < 1000; round++) {
        for (int k = 0; k < 100; k++) {
            drv_unsettled_push(&list, next++);
        }
        settled += 60;
        assert_int_equal(drv_unsettled_settle(&list, settled), 60);
        assert_int_equal(drv_unsettled_count(&list), (size_t)(next - 1 - settled));
        assert_int_equal(list.inputs[list.head], settled + 1);
    }
    assert_true(list.size <= 2 * 65536); // compacted, not grown for ever: 40,000 held
    drv_unsettled_forget(&list);
    assert_int_equal(drv_unsettled_count(&list), 0);
    drv_unsettled_free(&list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batches_settle_in_order_from_the_front),
        cmocka_unit_test(test_a_long_backlog_keeps_its_order_through_compaction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
