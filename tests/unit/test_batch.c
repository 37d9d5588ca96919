/*  drv_batch and drv_mpcheck, the decoding every producer message goes
    through: the check refuses what msgpack-c would misread or allocate
    for, at the exact byte; every format passes it; nesting stops at 32
    levels; and a duplicate key is found wherever two keys are alike
    (keys whose first and last 8 bytes agree included). */
#include "drover/drv_batch.h"
#include "drover/drv_mpcheck.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int s_check(const char *bytes, size_t size, char *err, size_t errlen)
{
    err[0] = 0;
    return drv_mpcheck(bytes, size, err, errlen);
}

static void test_every_format_passes_and_each_cut_short_is_truncated(void **state)
{
    (void)state;
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 20);
    msgpack_pack_nil(&pk);
    msgpack_pack_true(&pk);
    msgpack_pack_int(&pk, 5);
    msgpack_pack_int(&pk, -5);
    msgpack_pack_uint8(&pk, 200);
    msgpack_pack_uint16(&pk, 60000);
    msgpack_pack_uint32(&pk, 4000000000u);
    msgpack_pack_uint64(&pk, 1ull << 60);
    msgpack_pack_int8(&pk, -100);
    msgpack_pack_int64(&pk, -(1ll << 60));
    msgpack_pack_float(&pk, 1.5f);
    msgpack_pack_double(&pk, 2.5);
    msgpack_pack_str_with_body(&pk, "fixstr", 6);
    char long_text[300];
    memset(long_text, 'x', sizeof long_text);
    msgpack_pack_str_with_body(&pk, long_text, sizeof long_text); // str 16
    msgpack_pack_bin_with_body(&pk, "\x00\xff", 2);
    msgpack_pack_ext_with_body(&pk, "abcd", 4, 7);  // fixext 4
    msgpack_pack_ext_with_body(&pk, "abcde", 5, 7); // ext 8
    msgpack_pack_array(&pk, 0);
    msgpack_pack_map(&pk, 1);
    msgpack_pack_str_with_body(&pk, "k", 1);
    msgpack_pack_array(&pk, 17); // array 16
    for (int i = 0; i < 17; i++) {
        msgpack_pack_int(&pk, i);
    }
    msgpack_pack_map(&pk, 16); // map 16
    for (int i = 0; i < 16; i++) {
        char key[8];
        snprintf(key, sizeof key, "k%d", i);
        msgpack_pack_str_with_body(&pk, key, strlen(key));
        msgpack_pack_nil(&pk);
    }
    char err[200];
    assert_int_equal(s_check(buf.data, buf.size, err, sizeof err), 0);
    for (size_t cut = 0; cut < buf.size; cut++) {
        assert_int_equal(s_check(buf.data, cut, err, sizeof err), -1);
        assert_true(strstr(err, "truncated") || strstr(err, "claims"));
    }
    msgpack_sbuffer_write(&buf, "\xc0", 1);
    assert_int_equal(s_check(buf.data, buf.size, err, sizeof err), -1);
    assert_string_equal(err, "1 trailing bytes after the message");
    msgpack_sbuffer_destroy(&buf);
}

static void test_what_msgpack_c_would_misread_is_refused_at_the_byte(void **state)
{
    (void)state;
    char err[200];
    assert_int_equal(s_check("\x92\x01\xc1", 3, err, sizeof err), -1);
    assert_string_equal(err, "malformed msgpack: byte 0xc1 at offset 2");
    //  An array 32 claiming 4 billion elements in 5 bytes: no allocation, no walk.
    assert_int_equal(s_check("\xdd\xff\xff\xff\xff", 5, err, sizeof err), -1);
    assert_string_equal(err, "container at offset 5 claims 4294967295 items in 0 bytes");
    //  A map counts its keys and values: 2 pairs need 4 values.
    assert_int_equal(s_check("\x82\x01\x02\x03", 4, err, sizeof err), -1);
    assert_string_equal(err, "container at offset 1 claims 4 items in 3 bytes");
    assert_int_equal(s_check("", 0, err, sizeof err), -1);
    assert_string_equal(err, "truncated msgpack (0 bytes)");
}

static void test_nesting_stops_at_32_levels(void **state)
{
    (void)state;
    char bytes[40];
    char err[200];
    for (int levels = 30; levels <= 34; levels++) {
        memset(bytes, 0x91, (size_t)levels); // [[[...]]]
        bytes[levels] = 0x01;
        int rc = s_check(bytes, (size_t)levels + 1, err, sizeof err);
        assert_int_equal(rc, levels <= DRV_MPCHECK_MAX_DEPTH ? 0 : -1);
        if (rc) {
            assert_string_equal(err, "nested deeper than 32 levels");
        }
    }
    //  Levels closed come back: many shallow containers side by side pass.
    char wide[3 + 2 * 100]; // an array 16 of 100 x [1]
    wide[0] = (char)0xdc;
    wide[1] = 0;
    wide[2] = 100;
    for (int i = 0; i < 100; i++) {
        wide[3 + 2 * i] = (char)0x91;
        wide[4 + 2 * i] = 0x01;
    }
    assert_int_equal(s_check(wide, 3 + 200, err, sizeof err), 0);
}

//  A batch of one record with these keys (all str), decoded: the duplicate it names, or NULL.
static const char *s_duplicate(const char *const *keys, int n, char *err, size_t errlen)
{
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, (size_t)n);
    for (int i = 0; i < n; i++) {
        msgpack_pack_str_with_body(&pk, keys[i], strlen(keys[i]));
        msgpack_pack_int(&pk, i);
    }
    msgpack_zone zone;
    msgpack_zone_init(&zone, 4096);
    msgpack_object root;
    const msgpack_object *records;
    int rc = drv_batch_decode(buf.data, buf.size, &zone, &root, &records, err, errlen);
    msgpack_zone_destroy(&zone);
    msgpack_sbuffer_destroy(&buf);
    return rc < 0 ? err : NULL;
}

static void test_duplicate_keys_are_found_however_alike_the_keys_are(void **state)
{
    (void)state;
    char err[200];
    //  Alike at both ends, different in the middle: not duplicates.
    const char *alike[] = {"service.name.0001.instance",
                           "service.name.0002.instance",
                           "a",
                           "b",
                           "",
                           "1234567",
                           "1234568",
                           "12345678",
                           "12345679"};
    assert_null(s_duplicate(alike, 9, err, sizeof err));
    const char *twice[] = {"service.name.0001.instance", "x", "y", "service.name.0001.instance"};
    assert_non_null(s_duplicate(twice, 4, err, sizeof err));
    assert_string_equal(err, "batch item 0 has a duplicate key \"service.name.0001.instance\"");
    const char *short_twice[] = {"ab", "abc", "ab"};
    assert_non_null(s_duplicate(short_twice, 3, err, sizeof err));
    assert_string_equal(err, "batch item 0 has a duplicate key \"ab\"");
    const char *empty_twice[] = {"", "a", ""};
    assert_non_null(s_duplicate(empty_twice, 3, err, sizeof err));
    //  Past the pairwise limit, through a table of prints: the same verdicts.
    char names[40][16];
    const char *many[41];
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof names[i], "key%03d", i);
        many[i] = names[i];
    }
    assert_null(s_duplicate(many, 40, err, sizeof err));
    many[40] = "key017";
    assert_non_null(s_duplicate(many, 41, err, sizeof err));
    assert_string_equal(err, "batch item 0 has a duplicate key \"key017\"");
    //  Keys alike in their prints (length, first and last 8 bytes), as a
    //  hostile map would send them: the table gives way to sorting, and
    //  past 1,024 keys sorting is all there is. The same verdicts.
    static char alike_names[1200][32];
    static const char *alike_many[1201];
    for (int count = 600; count <= 1200; count += 600) {
        for (int i = 0; i < count; i++) {
            snprintf(alike_names[i], sizeof alike_names[i], "aaaaaaaa-%05d-zzzzzzzz", i);
            alike_many[i] = alike_names[i];
        }
        assert_null(s_duplicate(alike_many, count, err, sizeof err));
        alike_many[count] = alike_names[count / 3];
        assert_non_null(s_duplicate(alike_many, count + 1, err, sizeof err));
        assert_non_null(strstr(err, alike_names[count / 3]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_format_passes_and_each_cut_short_is_truncated),
        cmocka_unit_test(test_what_msgpack_c_would_misread_is_refused_at_the_byte),
        cmocka_unit_test(test_nesting_stops_at_32_levels),
        cmocka_unit_test(test_duplicate_keys_are_found_however_alike_the_keys_are),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
