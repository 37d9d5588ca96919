/*  drv_s3_key: a template's fields and time conversions filled in, and a
    sequence that goes on across restarts and never gives one number
    twice, whoever takes them (two processes of one core in a replace). */
#include "drv_s3_key.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static void test_template_filled_in(void **state)
{
    (void)state;
    drv_s3_key_fields_t fields = {
        .signal = "logs", .instance = "default.app.0", .seq = 42, .ext = "ndjson.gz", .when = 1795912345};
    char key[512];
    assert_int_equal(
        drv_s3_key_make("{signal}/year=%Y/month=%m/day=%d/hour=%H/{instance}-{seq}.{ext}", &fields, key, sizeof key),
        0);
    assert_string_equal(key, "logs/year=2026/month=11/day=29/hour=00/default.app.0-42.ndjson.gz");
    //  A field's text is not strftime's, whatever it holds.
    fields.instance = "a%Yb";
    assert_int_equal(drv_s3_key_make("{instance}/{seq}", &fields, key, sizeof key), 0);
    assert_string_equal(key, "a%Yb/42");
    assert_int_equal(drv_s3_key_make("{instance}/{seq}", &fields, key, 6), -1); // does not fit
}

static void test_sequence_goes_on_and_never_repeats(void **state)
{
    (void)state;
    char path[] = "/tmp/drv-s3-seq-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path); // absent: the first number is the time in microseconds
    char err[200];
    uint64_t first, next;
    assert_int_equal(drv_s3_key_next_seq(path, &first, err, sizeof err), 0);
    assert_true(first > 1700000000000000u);
    assert_int_equal(drv_s3_key_next_seq(path, &next, err, sizeof err), 0);
    assert_true(next == first + 1);
    //  Two processes taking numbers at once: none taken twice.
    int pipes[2];
    assert_int_equal(pipe(pipes), 0);
    for (int child = 0; child < 2; child++) {
        if (fork() == 0) {
            for (int i = 0; i < 200; i++) {
                uint64_t seq;
                if (drv_s3_key_next_seq(path, &seq, err, sizeof err) != 0 ||
                    write(pipes[1], &seq, sizeof seq) != (ssize_t)sizeof seq) {
                    _exit(1);
                }
            }
            _exit(0);
        }
    }
    close(pipes[1]);
    uint64_t seen[400];
    size_t n = 0;
    while (n < 400 && read(pipes[0], &seen[n], sizeof seen[n]) == (ssize_t)sizeof seen[n]) {
        n++;
    }
    close(pipes[0]);
    int status;
    while (wait(&status) > 0) {
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    assert_int_equal(n, 400);
    for (size_t i = 0; i < n; i++) {
        assert_true(seen[i] > next && seen[i] <= next + 400);
        for (size_t k = 0; k < i; k++) {
            assert_true(seen[i] != seen[k]);
        }
    }
    assert_int_equal(drv_s3_key_next_seq("/nonexistent-dir/x.seq", &next, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent-dir/x.seq"));
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template_filled_in),
        cmocka_unit_test(test_sequence_goes_on_and_never_repeats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
