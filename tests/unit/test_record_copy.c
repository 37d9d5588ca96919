/*  drv_record_copy: the copy equals the record and outlives the zone it
    came from, and the size it reports is exactly the record's packed size
    (what batch.max_bytes of the HTTP exporters counts). */
#include "drv_record_copy.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

//  A record with every kind of value, at sizes on both sides of each header boundary.
static void s_pack_sample(msgpack_packer *pk, size_t str_len, uint32_t n)
{
    char *text = malloc(str_len + 1);
    memset(text, 'x', str_len);
    msgpack_pack_map(pk, 12);
    msgpack_pack_str_with_body(pk, "s", 1);
    msgpack_pack_str_with_body(pk, text, str_len);
    msgpack_pack_str_with_body(pk, "b", 1);
    msgpack_pack_bin_with_body(pk, text, str_len);
    msgpack_pack_str_with_body(pk, "u", 1);
    msgpack_pack_uint64(pk, (uint64_t)str_len * 1000003u);
    msgpack_pack_str_with_body(pk, "big", 3);
    msgpack_pack_uint64(pk, UINT64_MAX - str_len);
    msgpack_pack_str_with_body(pk, "neg", 3);
    msgpack_pack_int64(pk, -(int64_t)str_len * 977);
    msgpack_pack_str_with_body(pk, "f32", 3);
    msgpack_pack_float(pk, 1.5f);
    msgpack_pack_str_with_body(pk, "f64", 3);
    msgpack_pack_double(pk, 2.25);
    msgpack_pack_str_with_body(pk, "t", 1);
    msgpack_pack_true(pk);
    msgpack_pack_str_with_body(pk, "nil", 3);
    msgpack_pack_nil(pk);
    msgpack_pack_str_with_body(pk, "arr", 3);
    msgpack_pack_array(pk, n);
    for (uint32_t i = 0; i < n; i++) {
        msgpack_pack_int32(pk, (int32_t)i - 40);
    }
    msgpack_pack_str_with_body(pk, "map", 3);
    msgpack_pack_map(pk, n);
    for (uint32_t i = 0; i < n; i++) {
        char key[16];
        int len = snprintf(key, sizeof key, "k%u", i);
        msgpack_pack_str_with_body(pk, key, (size_t)len);
        msgpack_pack_array(pk, 0);
    }
    msgpack_pack_str_with_body(pk, "ext", 3);
    msgpack_pack_ext_with_body(pk, text, str_len > 20 ? 20 : str_len, 7);
    free(text);
}

static void test_the_copy_is_the_record_and_its_size_is_the_packed_size(void **state)
{
    (void)state;
    size_t lens[] = {0, 1, 31, 32, 255, 256, 65535, 65536};
    uint32_t counts[] = {0, 15, 16, 300};
    for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
        for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
            msgpack_sbuffer packed;
            msgpack_sbuffer_init(&packed);
            msgpack_packer pk;
            msgpack_packer_init(&pk, &packed, msgpack_sbuffer_write);
            s_pack_sample(&pk, lens[l], counts[c]);
            msgpack_zone source, mine;
            msgpack_zone_init(&source, 1024);
            msgpack_zone_init(&mine, 1024);
            msgpack_object record, copy;
            size_t offset = 0;
            assert_int_equal(msgpack_unpack(packed.data, packed.size, &offset, &source, &record),
                             MSGPACK_UNPACK_SUCCESS);
            size_t size = drv_record_copy(&mine, &record, &copy);
            msgpack_sbuffer again;
            msgpack_sbuffer_init(&again);
            msgpack_packer_init(&pk, &again, msgpack_sbuffer_write);
            msgpack_pack_object(&pk, record);
            assert_int_equal(size, again.size);
            memset(packed.data, 0, packed.size); // the record's bytes are gone ...
            msgpack_zone_destroy(&source);       // ... and so is its zone: the copy stands alone
            msgpack_sbuffer copied;
            msgpack_sbuffer_init(&copied);
            msgpack_packer_init(&pk, &copied, msgpack_sbuffer_write);
            msgpack_pack_object(&pk, copy);
            assert_int_equal(copied.size, again.size);
            assert_memory_equal(copied.data, again.data, again.size);
            msgpack_sbuffer_destroy(&copied);
            msgpack_sbuffer_destroy(&again);
            msgpack_sbuffer_destroy(&packed);
            msgpack_zone_destroy(&mine);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_copy_is_the_record_and_its_size_is_the_packed_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
