/*  drv_tail_index: the files followed by identity and by path. Entries put,
    found, replaced and removed in every order keep every other entry
    findable (a removal shifts back the run after it, leaving no
    tombstone), across growth; a removal of another file's entry is a
    no-op. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "drv_tail_index.h"

#define N 5000

static int s_files[N];

static void test_put_get_remove_in_any_order(void **state)
{
    (void)state;
    drv_tail_index_t index = {0};
    for (int i = 0; i < N; i++) {
        assert_int_equal(drv_tail_index_put(&index, 64768, (uint64_t)i * 7919, &s_files[i]), 0);
    }
    assert_int_equal(index.count, N);
    for (int i = 0; i < N; i++) {
        assert_ptr_equal(drv_tail_index_get(&index, 64768, (uint64_t)i * 7919), &s_files[i]);
    }
    assert_null(drv_tail_index_get(&index, 64768, 1));
    assert_null(drv_tail_index_get(&index, 1, 0));
    for (int i = 0; i < N; i += 3) { // every third gone: the runs they were in still found
        drv_tail_index_remove(&index, 64768, (uint64_t)i * 7919, &s_files[i]);
    }
    for (int i = 0; i < N; i++) {
        assert_ptr_equal(drv_tail_index_get(&index, 64768, (uint64_t)i * 7919), i % 3 ? &s_files[i] : NULL);
    }
    drv_tail_index_remove(&index, 64768, 7919, &s_files[2]); // another file's entry: stays
    assert_ptr_equal(drv_tail_index_get(&index, 64768, 7919), &s_files[1]);
    assert_int_equal(drv_tail_index_put(&index, 64768, 7919, &s_files[0]), 0); // replaced, not added
    assert_ptr_equal(drv_tail_index_get(&index, 64768, 7919), &s_files[0]);
    assert_int_equal(index.count, N - (N + 2) / 3);
    drv_tail_index_fini(&index);
    assert_null(drv_tail_index_get(&index, 64768, 7919));
}

static void test_paths_as_keys(void **state)
{
    (void)state;
    assert_true(drv_tail_index_path("/var/log/a.log") != drv_tail_index_path("/var/log/b.log"));
    assert_true(drv_tail_index_path("/var/log/a.log") == drv_tail_index_path("/var/log/a.log"));
    drv_tail_index_t index = {0};
    drv_tail_index_put(&index, drv_tail_index_path("/x/0.log"), 0, &s_files[0]);
    assert_ptr_equal(drv_tail_index_get(&index, drv_tail_index_path("/x/0.log"), 0), &s_files[0]);
    assert_null(drv_tail_index_get(&index, drv_tail_index_path("/x/1.log"), 0));
    drv_tail_index_fini(&index);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_remove_in_any_order),
        cmocka_unit_test(test_paths_as_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
