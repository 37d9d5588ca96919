/*  drv_ndjson: a written line never holds a duplicate key, whatever keys
    the record had (issue 23: 1 and "1", or two invalid UTF-8 keys that
    both read "a\ufffd", were written as the same key twice); strings are
    escaped alike wherever their special bytes fall against the eight-byte
    words the writer scans (issue 55); a key that is a map of maps is cut
    short, not escaped again at each level into a line millions of times
    its size. */
#include "drv_ndjson.h"

#include <msgpack.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

//  The NDJSON line of a map of n pairs whose keys are given as msgpack objects.
static char *s_line(const msgpack_object *keys, size_t n)
{
    msgpack_object_kv kv[8];
    for (size_t i = 0; i < n; i++) {
        kv[i].key = keys[i];
        kv[i].val = (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = i};
    }
    msgpack_object map = {.type = MSGPACK_OBJECT_MAP, .via.map = {(uint32_t)n, kv}};
    drv_buf_t out = {0};
    assert_int_equal(drv_ndjson_append(&out, &map), 0);
    char *line = calloc(1, out.len + 1);
    memcpy(line, out.data, out.len);
    drv_buf_free(&out);
    return line;
}

static msgpack_object s_str(const char *s)
{
    return (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)strlen(s), s}};
}

//  A map whose only key is the map one level down, depth levels deep: each
//  level's key text is the escaped text of the one below.
static void test_keys_that_are_maps_of_maps_stay_bounded(void **state)
{
    (void)state;
    enum { DEPTH = 20 };
    msgpack_object_kv kv[DEPTH];
    msgpack_object level = s_str("a \"quoted\" \\ key");
    for (int d = 0; d < DEPTH; d++) {
        kv[d].key = level;
        kv[d].val = (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = (uint64_t)d};
        level = (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {1, &kv[d]}};
    }
    drv_buf_t out = {0};
    assert_int_equal(drv_ndjson_append(&out, &level), 0);
    assert_true(out.len < 16 * 1024); // uncut: 2^20 times the innermost key
    assert_non_null(memmem(out.data, out.len, "...", 3));
    assert_int_equal(out.data[out.len - 1], '\n');
    drv_buf_free(&out);
}

static void test_plain_keys_are_written_as_they_are(void **state)
{
    (void)state;
    msgpack_object keys[] = {s_str("a"), s_str("b~2"), s_str("caf\xc3\xa9")};
    char *line = s_line(keys, 3);
    assert_string_equal(line, "{\"a\":0,\"b~2\":1,\"caf\xc3\xa9\":2}\n");
    free(line);
}

static void test_keys_that_read_alike_are_told_apart(void **state)
{
    (void)state;
    msgpack_object one = {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 1};
    msgpack_object keys[] = {one, s_str("1"), s_str("1~2")};
    char *line = s_line(keys, 3);
    assert_string_equal(line, "{\"1\":0,\"1~2\":1,\"1~2~2\":2}\n");
    free(line);
    msgpack_object invalid[] = {s_str("a\xff"), s_str("a\xfe"), s_str("a\xef\xbf\xbd")};
    line = s_line(invalid, 3);
    assert_string_equal(line, "{\"a\xef\xbf\xbd\":0,\"a\xef\xbf\xbd~2\":1,\"a\xef\xbf\xbd~3\":2}\n");
    free(line);
}

//  A 24-byte string with one special byte (or sequence) at every offset:
//  the same escape wherever it falls in, or across, the words scanned.
static void test_escapes_are_found_at_every_offset(void **state)
{
    (void)state;
    const char *special[] = {"\"", "\\", "\n", "\x01", "\xc3\xa9", "\xff", "\x7f"};
    const char *escaped[] = {"\\\"", "\\\\", "\\n", "\\u0001", "\xc3\xa9", "\xef\xbf\xbd", "\x7f"};
    for (size_t k = 0; k < sizeof special / sizeof *special; k++) {
        for (size_t at = 0; at < 24; at++) {
            char in[40], want[80];
            size_t n = strlen(special[k]);
            memset(in, 'a', sizeof in);
            memcpy(in + at, special[k], n);
            in[24 + n - 1] = '\0';
            snprintf(want, sizeof want, "{\"%.*s%s%.*s\":0}\n", (int)at, in, escaped[k], (int)(24 - 1 - at),
                     in + at + n);
            msgpack_object key = s_str(in);
            char *line = s_line(&key, 1);
            assert_string_equal(line, want);
            free(line);
        }
    }
}

//  Integers as JSON numbers, every digit, at the edges of each width.
static void test_integers_are_written_whole(void **state)
{
    (void)state;
    const struct {
        msgpack_object value;
        const char *want;
    } cases[] = {
        {{.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 0}, "0"},
        {{.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 9}, "9"},
        {{.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 10}, "10"},
        {{.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 99}, "99"},
        {{.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 100}, "100"},
        {{.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 1032}, "1032"},
        {{.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 1795979003123456789ull}, "1795979003123456789"},
        {{.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = UINT64_MAX}, "18446744073709551615"},
        {{.type = MSGPACK_OBJECT_NEGATIVE_INTEGER, .via.i64 = -1}, "-1"},
        {{.type = MSGPACK_OBJECT_NEGATIVE_INTEGER, .via.i64 = -10}, "-10"},
        {{.type = MSGPACK_OBJECT_NEGATIVE_INTEGER, .via.i64 = INT64_MIN}, "-9223372036854775808"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        msgpack_object_kv kv = {s_str("n"), cases[i].value};
        msgpack_object map = {.type = MSGPACK_OBJECT_MAP, .via.map = {1, &kv}};
        drv_buf_t out = {0};
        assert_int_equal(drv_ndjson_append(&out, &map), 0);
        char want[64];
        snprintf(want, sizeof want, "{\"n\":%s}\n", cases[i].want);
        assert_int_equal(out.len, strlen(want));
        assert_memory_equal(out.data, want, out.len);
        drv_buf_free(&out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_keys_are_written_as_they_are),
        cmocka_unit_test(test_keys_that_are_maps_of_maps_stay_bounded),
        cmocka_unit_test(test_keys_that_read_alike_are_told_apart),
        cmocka_unit_test(test_escapes_are_found_at_every_offset),
        cmocka_unit_test(test_integers_are_written_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
