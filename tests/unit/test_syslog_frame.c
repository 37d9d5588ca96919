/*  Syslog over TCP cut into messages (RFC 6587): octet counting and lines,
    told apart by a connection's first byte; streams that arrive a byte at a
    time; counts that are not counts; frames and lines past the limit
    refused, never split. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "drv_syslog_frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Feeds stream to a new framer (max: its limit, 0 for the default) in
//  pieces of step bytes, as a connection's reads would; returns the
//  messages joined with '|', and "TOO_LONG(n)" where it refused one (the
//  connection is then closed: nothing after it is read).
static char *s_cut_max(const char *stream, size_t len, size_t step, size_t max)
{
    drv_syslog_framer_t f = {.max = max};
    char *buf = malloc(len + 1), *out = calloc(1, len * 2 + 2 * DRV_SYSLOG_FRAME_MAX + 16);
    size_t have = 0, fed = 0;
    while (fed < len || have > 0) {
        size_t more = fed + step <= len ? step : len - fed;
        memcpy(buf + have, stream + fed, more);
        have += more;
        fed += more;
        const char *msg;
        size_t msg_len, used;
        drv_frame_t frame;
        size_t at = 0;
        while ((frame = drv_syslog_frame_next(&f, buf + at, have - at, &msg, &msg_len, &used)) == DRV_FRAME_MESSAGE) {
            strncat(out, msg, msg_len);
            strcat(out, "|");
            at += used;
        }
        if (frame == DRV_FRAME_TOO_LONG) {
            sprintf(out + strlen(out), "TOO_LONG(%zu)", msg_len);
            break;
        }
        memmove(buf, buf + at, have - at);
        have -= at;
        if (more == 0) {
            break; // the rest is an unfinished message
        }
    }
    free(buf);
    return out;
}

static char *s_cut(const char *stream, size_t len, size_t step)
{
    return s_cut_max(stream, len, step, 0);
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
}

static void test_a_frame_past_the_limit_is_refused_whole(void **state)
{
    (void)state;
    //  A count over the limit: refused as soon as the count is read, before the
    //  frame's bytes; what came before it is taken, nothing after.
    char *out = s_cut("3 abc70000 over the limit\n", 26, 26);
    assert_string_equal(out, "abc|TOO_LONG(70000)");
    free(out);
    //  One byte over a small limit: refused; exactly the limit: taken.
    out = s_cut_max("6 abcdef5 abcde", 15, 1, 5);
    assert_string_equal(out, "TOO_LONG(6)");
    free(out);
    out = s_cut_max("5 abcde5 vwxyz", 14, 3, 5);
    assert_string_equal(out, "abcde|vwxyz|");
    free(out);
}

static void test_a_line_past_the_limit_is_refused_never_cut(void **state)
{
    (void)state;
    size_t long_len = DRV_SYSLOG_FRAME_MAX + 100;
    char *stream = malloc(long_len + 16);
    memcpy(stream, "<13>ok\n", 7);
    memset(stream + 7, 'x', long_len - 7);
    memcpy(stream + long_len, "\nshort\n", 7);
    char *out = s_cut(stream, long_len + 7, 4096);
    assert_string_equal(out, "<13>ok|TOO_LONG(65537)"); // seen once it holds max + 1 bytes without LF
    free(out);
    free(stream);
    out = s_cut_max("abcde\nabcdef\n", 13, 13, 5);
    assert_string_equal(out, "abcde|TOO_LONG(6)"); // max + 1: all it knows
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_octet_counting_in_any_pieces),
        cmocka_unit_test(test_lines_in_any_pieces),
        cmocka_unit_test(test_a_count_that_is_not_one_means_lines),
        cmocka_unit_test(test_a_frame_past_the_limit_is_refused_whole),
        cmocka_unit_test(test_a_line_past_the_limit_is_refused_never_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
