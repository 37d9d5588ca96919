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
    const char *good[] = {"", "plain", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf",
                          "\xed\x9f\xbf"};
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_and_invalid_sequences),
        cmocka_unit_test(test_sanitize_replaces_each_ill_formed_subpart_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
