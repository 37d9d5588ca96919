/*  drv_stream: the bounded queue between the loop and a streaming client.
    What is pushed is read back in order; a full queue refuses (the writer
    counts a drop) and takes again once read; the reader parks on an empty
    queue and the next push (or the end) wakes it exactly once; a reader
    that left makes pushes answer -2. */
#include "drv_stream.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static int s_parks, s_wakes;

static void s_park(void *arg)
{
    (void)arg;
    s_parks++;
}

static void s_wake(void *arg)
{
    (void)arg;
    s_wakes++;
}

static void test_order_bound_and_reuse(void **state)
{
    (void)state;
    drv_stream_t *s = drv_stream_new(10);
    char buf[64];
    assert_int_equal(drv_stream_push(s, "abcd", 4), 0);
    assert_int_equal(drv_stream_push(s, "efgh", 4), 0);
    assert_int_equal(drv_stream_push(s, "ijk", 3), -1); // 11 > 10: refused whole
    assert_int_equal(drv_stream_read(s, buf, 3, s_park, NULL), 3);
    assert_memory_equal(buf, "abc", 3);
    assert_int_equal(drv_stream_push(s, "ijk", 3), 0); // 8 unread now: room again
    assert_int_equal(drv_stream_read(s, buf, sizeof buf, s_park, NULL), 8);
    assert_memory_equal(buf, "defghijk", 8);
    for (int i = 0; i < 1000; i++) { // a long life moves through the buffer without growing it
        assert_int_equal(drv_stream_push(s, "0123456789", 10), 0);
        assert_int_equal(drv_stream_read(s, buf, 7, s_park, NULL), 7);
        assert_int_equal(drv_stream_read(s, buf + 7, 7, s_park, NULL), 3);
        assert_memory_equal(buf, "0123456789", 10);
    }
    drv_stream_unref(&s);
}

static void test_park_wake_end_and_leave(void **state)
{
    (void)state;
    s_parks = s_wakes = 0;
    drv_stream_t *s = drv_stream_new(100);
    drv_stream_t *reader = drv_stream_ref(s);
    drv_stream_attach(reader, s_wake, NULL);
    char buf[16];
    assert_int_equal(drv_stream_read(reader, buf, sizeof buf, s_park, NULL), 0);
    assert_int_equal(s_parks, 1);
    assert_int_equal(drv_stream_push(s, "x", 1), 0);
    assert_int_equal(drv_stream_push(s, "y", 1), 0);
    assert_int_equal(s_wakes, 1); // woken once, not per push
    assert_int_equal(drv_stream_read(reader, buf, sizeof buf, s_park, NULL), 2);
    assert_int_equal(drv_stream_read(reader, buf, sizeof buf, s_park, NULL), 0);
    drv_stream_end(s);
    assert_int_equal(s_wakes, 2);
    assert_int_equal(drv_stream_read(reader, buf, sizeof buf, s_park, NULL), -1);
    assert_int_equal(drv_stream_push(s, "z", 1), -1); // ended: nothing more
    drv_stream_leave(reader);
    assert_true(drv_stream_gone(s));
    assert_int_equal(drv_stream_push(s, "z", 1), -2);
    drv_stream_unref(&reader);
    drv_stream_unref(&s);
    assert_null(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_bound_and_reuse),
        cmocka_unit_test(test_park_wake_end_and_leave),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
