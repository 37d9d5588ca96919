/*  drv_utf8: strict validation (RFC 3629, Unicode table 3-7) and U+FFFD
    replacement of ill-formed subparts. */
#include "drover/drv_utf8.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_valid_and_invalid_sequences(void **state)
{
    (void)state;
    const char *good[] = {
        "", "plain", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        assert_true(drv_utf8_valid(good[i], strlen(good[i]), false));
    }
    const char *bad[] = {
        "\xc0\xaf",         // overlong "/"
        "\xe0\x80\xaf",     // overlong, three bytes
        "\xf0\x80\x80\xaf", // overlong, four bytes
        "\xed\xa0\x80",     // a surrogate (U+D800)
        "\xf4\x90\x80\x80", // past U+10FFFF
        "\xf5\x80\x80\x80", // never a lead byte
        "\xff",             // never in UTF-8
        "\xc3",             // truncated
        "\x80",             // a lone continuation byte
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_false(drv_utf8_valid(bad[i], strlen(bad[i]), false));
    }
    assert_false(drv_utf8_valid("a\0b", 3, false));
    assert_true(drv_utf8_valid("a\0b", 3, true));
}

static void test_sanitize_replaces_each_ill_formed_subpart_once(void **state)
{
    (void)state;
    char *out = drv_utf8_sanitize("a\xed\xa0\x80z", 5);
    //  ED A0 is not a well-formed prefix: ED, A0 and 80 each become U+FFFD.
    assert_string_equal(out, "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz");
    free(out);
    out = drv_utf8_sanitize("\xe2\x82x", 3); // a truncated euro sign: one U+FFFD
    assert_string_equal(out, "\xef\xbf\xbdx");
    free(out);
    out = drv_utf8_sanitize("n\0ul", 4);
    assert_string_equal(out, "n\xef\xbf\xbdul");
    free(out);
}

static void test_bounded_texts_are_cut_between_characters(void **state)
{
    (void)state;
    char buf[6];
    //  "aé€" is 1 + 2 + 3 bytes: a 6-byte buffer holds 5, which splits the euro sign.
    assert_int_equal(drv_utf8_snprintf(buf, sizeof buf, "%s", "a\xc3\xa9\xe2\x82\xac"), 3);
    assert_string_equal(buf, "a\xc3\xa9");
    assert_int_equal(drv_utf8_snprintf(buf, 3, "%s", "a\xc3\xa9"), 1); // the 2-byte one cut after its lead
    assert_string_equal(buf, "a");
    assert_int_equal(drv_utf8_snprintf(buf, sizeof buf, "%s", "abcdefgh"), 5); // ASCII: cut anywhere
    assert_int_equal(drv_utf8_snprintf(buf, 4, "%s", "\xf0\x9f\x98\x80"), 0);  // 3 of its 4 bytes: none
    assert_string_equal(buf, "");
    assert_int_equal(drv_utf8_snprintf(buf, sizeof buf, "%s", "\xf0\x9f\x98\x80!!"), 5); // the 4 whole, then "!"
    assert_string_equal(buf, "\xf0\x9f\x98\x80!");
    assert_int_equal(drv_utf8_snprintf(buf, sizeof buf, "%d", 42), 2); // not cut: untouched
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_and_invalid_sequences),
        cmocka_unit_test(test_sanitize_replaces_each_ill_formed_subpart_once),
        cmocka_unit_test(test_bounded_texts_are_cut_between_characters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
