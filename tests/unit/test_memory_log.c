/*  drv_memory_log, the inputs a memory-buffered instance keeps while an
    exporter is behind (issue 37): what is kept is read back by number, in
    order, with gaps in the numbering skipped; what is ahead of a position
    is counted in bytes and records; fitting a bound passes over the oldest;
    forgetting frees whole chunks, also across many of them, and an input
    larger than a chunk is kept whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "drv_memory_log.h"

#include <stdlib.h>
#include <string.h>

//  Keeps an input of size bytes (each byte its number's low byte) and n records.
static void s_keep(drv_memory_log_t *log, int64_t number, size_t size, uint32_t n)
{
    char *bytes = malloc(size ? size : 1);
    memset(bytes, (int)(number & 0xff), size);
    drv_buffer_input_t input = {.node = number % 2 ? "odd" : "even",
                                .form = DRV_BUFFER_RAW,
                                .records = n,
                                .parts = {{bytes, size / 2}, {bytes + size / 2, size - size / 2}},
                                .count = 2};
    assert_int_equal(drv_memory_log_append(log, number, &input, 1000 + number), 0);
    free(bytes);
}

static void test_read_back_in_order(void **state)
{
    (void)state;
    drv_memory_log_t *log = drv_memory_log_new();
    assert_true(drv_memory_log_empty(log));
    for (int64_t k = 1; k <= 10; k++) {
        s_keep(log, k == 10 ? 20 : k, 100, 3); // a gap: 9, then 20
    }
    drv_buffer_input_t input;
    assert_int_equal(drv_memory_log_read(log, 4, &input), 1);
    assert_int_equal(input.number, 4);
    assert_string_equal(input.node, "even");
    assert_int_equal(input.form, DRV_BUFFER_RAW);
    assert_int_equal(input.size, 100);
    assert_int_equal(input.records, 3);
    assert_int_equal(input.time_ms, 1004);
    assert_int_equal(((const unsigned char *)input.data)[99], 4);
    assert_int_equal(drv_memory_log_read(log, 10, &input), 1); // the next one kept after 9
    assert_int_equal(input.number, 20);
    assert_int_equal(drv_memory_log_read(log, 21, &input), 0);
    assert_int_equal(drv_memory_log_bytes_from(log, 1), 1000);
    assert_int_equal(drv_memory_log_bytes_from(log, 8), 300);
    assert_int_equal(drv_memory_log_records_from(log, 8), 9);
    assert_int_equal(drv_memory_log_bytes_from(log, 21), 0);
    drv_memory_log_forget(log, 5);
    assert_int_equal(drv_memory_log_read(log, 1, &input), 1);
    assert_int_equal(input.number, 6);
    int64_t bytes, records;
    drv_memory_log_size(log, &bytes, &records);
    assert_int_equal(bytes, 500);
    assert_int_equal(records, 15);
    drv_memory_log_forget(log, INT64_MAX);
    assert_true(drv_memory_log_empty(log));
    assert_int_equal(drv_memory_log_bytes_from(log, 1), 0);
    drv_memory_log_destroy(&log);
    assert_null(log);
}

static void test_fit_passes_over_the_oldest(void **state)
{
    (void)state;
    drv_memory_log_t *log = drv_memory_log_new();
    for (int64_t k = 1; k <= 10; k++) {
        s_keep(log, k, 100, 2);
    }
    int64_t skipped = -1;
    assert_int_equal(drv_memory_log_fit_from(log, 1, 350, &skipped), 8); // 8, 9, 10: 300 bytes
    assert_int_equal(skipped, 14);
    assert_int_equal(drv_memory_log_fit_from(log, 9, 350, &skipped), 9); // fits already
    assert_int_equal(skipped, 0);
    assert_int_equal(drv_memory_log_fit_from(log, 3, 0, &skipped), 11); // nothing fits: past the newest
    assert_int_equal(skipped, 16);
    drv_memory_log_destroy(&log);
}

static void test_chunks_come_and_go(void **state)
{
    (void)state;
    drv_memory_log_t *log = drv_memory_log_new();
    //  Some 40 MiB in 64 KiB inputs, one of 9 MiB among them (more than a chunk).
    int64_t number = 0;
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < 640; k++) {
            number++;
            s_keep(log, number, number == 100 ? 9 << 20 : 64 << 10, 1);
        }
        drv_buffer_input_t input;
        assert_int_equal(drv_memory_log_read(log, 100, &input), 1);
        if (round == 0) {
            assert_int_equal(input.size, 9 << 20);
            assert_int_equal(((const unsigned char *)input.data)[(9 << 20) - 1], 100);
        }
        drv_memory_log_forget(log, number - 10); // all but the newest ten
        assert_int_equal(drv_memory_log_bytes_from(log, 0), 10 * (64 << 10));
        assert_int_equal(drv_memory_log_read(log, 0, &input), 1);
        assert_int_equal(input.number, number - 9);
        assert_int_equal(((const unsigned char *)input.data)[0], (number - 9) & 0xff);
    }
    drv_memory_log_destroy(&log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_back_in_order),
        cmocka_unit_test(test_fit_passes_over_the_oldest),
        cmocka_unit_test(test_chunks_come_and_go),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
