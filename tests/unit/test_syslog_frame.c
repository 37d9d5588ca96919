/*  Syslog over TCP cut into messages (RFC 6587): octet counting and lines,
    told apart by a connection's first byte; streams that arrive a byte at a
    time; counts that are not counts; lines past the limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "drv_syslog_frame.h"

#include <stdlib.h>
#include <string.h>

//  Feeds stream to a new framer in pieces of step bytes, as a connection's
//  reads would; returns the messages joined with '|'.
static char *s_cut(const char *stream, size_t len, size_t step)
{
    drv_syslog_framer_t f = {0};
    char *buf = malloc(len + 1), *out = calloc(1, len * 2 + 2 * DRV_SYSLOG_FRAME_MAX + 16);
    size_t have = 0, fed = 0;
    while (fed < len || have > 0) {
        size_t more = fed + step <= len ? step : len - fed;
        memcpy(buf + have, stream + fed, more);
        have += more;
        fed += more;
        const char *msg;
        size_t msg_len, used;
        bool whole;
        size_t at = 0;
        do {
            whole = drv_syslog_frame_next(&f, buf + at, have - at, &msg, &msg_len, &used);
            if (whole) {
                strncat(out, msg, msg_len);
                strcat(out, "|");
            }
            at += used;
        } while (used > 0);
        memmove(buf, buf + at, have - at);
        have -= at;
        if (more == 0) {
            break; // the rest is an unfinished message
        }
    }
    free(buf);
    return out;
}

static void test_octet_counting_in_any_pieces(void **state)
{
    (void)state;
    const char *stream = "11 <13>1 - a b5 <14>x2 ab";
    for (size_t step = 1; step <= strlen(stream); step++) {
        char *out = s_cut(stream, strlen(stream), step);
        assert_string_equal(out, "<13>1 - a b|<14>x|ab|");
        free(out);
    }
}

static void test_lines_in_any_pieces(void **state)
{
    (void)state;
    const char *stream = "<13>one\n<14>two\r\n\n<15>three";
    for (size_t step = 1; step <= strlen(stream); step++) {
        char *out = s_cut(stream, strlen(stream), step);
        assert_string_equal(out, "<13>one|<14>two\r||"); // "three" has no LF yet
        free(out);
    }
}

static void test_a_count_that_is_not_one_means_lines(void **state)
{
    (void)state;
    char *out = s_cut("12x no space\nnext\n", 18, 18);
    assert_string_equal(out, "12x no space|next|");
    free(out);
    out = s_cut("99999999999 ten digits\n", 23, 23);
    assert_string_equal(out, "99999999999 ten digits|");
    free(out);
    out = s_cut("70000 over the limit\n", 21, 21);
    assert_string_equal(out, "70000 over the limit|");
    free(out);
}

static void test_a_line_past_the_limit_is_cut_and_its_rest_dropped(void **state)
{
    (void)state;
    size_t long_len = DRV_SYSLOG_FRAME_MAX + 100;
    char *stream = malloc(long_len + 16);
    memset(stream, 'x', long_len);
    memcpy(stream + long_len, "\nshort\n", 7);
    char *out = s_cut(stream, long_len + 7, 4096);
    assert_int_equal(strlen(out), DRV_SYSLOG_FRAME_MAX + strlen("|short|"));
    assert_string_equal(out + DRV_SYSLOG_FRAME_MAX, "|short|");
    free(out);
    free(stream);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_octet_counting_in_any_pieces),
        cmocka_unit_test(test_lines_in_any_pieces),
        cmocka_unit_test(test_a_count_that_is_not_one_means_lines),
        cmocka_unit_test(test_a_line_past_the_limit_is_cut_and_its_rest_dropped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
