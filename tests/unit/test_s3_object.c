/*  drv_s3_object: an object made a run of records at a time is the object
    made at once: NDJSON lines in order, gzip and zstd streams that
    decompress whole, OTLP/JSON runs joined into one request. */
#include "drv_s3_object.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include <cmocka.h>
#include <jansson.h>

#define RECORDS 3000

//  Record i: {"id": i, "pad": "<i's digits repeated>"}, in zone.
static void s_records(msgpack_zone *zone, msgpack_object *records, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        msgpack_object_kv *kv = msgpack_zone_malloc(zone, 2 * sizeof *kv);
        char *pad = msgpack_zone_malloc(zone, 200);
        for (size_t j = 0; j < 200; j++) {
            pad[j] = (char)('a' + (i * 7 + j) % 26);
        }
        kv[0] = (msgpack_object_kv){{.type = MSGPACK_OBJECT_STR, .via.str = {2, "id"}},
                                    {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = i}};
        kv[1] = (msgpack_object_kv){{.type = MSGPACK_OBJECT_STR, .via.str = {3, "pad"}},
                                    {.type = MSGPACK_OBJECT_STR, .via.str = {200, pad}}};
        records[i] = (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {2, kv}};
    }
}

//  The object of records made in runs of `run` records (0: one run), decompressed.
static drv_buf_t s_make(drv_s3_format_t format, drv_s3_compression_t compression, const msgpack_object *records,
                        size_t n, size_t run)
{
    drv_s3_object_t *object = drv_s3_object_new(format, compression, 0);
    assert_non_null(object);
    drv_buf_t out = {0}, plain = {0};
    for (size_t at = 0; at < n; at += run ? run : n) {
        size_t take = run && n - at > run ? run : n - at;
        assert_int_equal(drv_s3_object_add(object, records + at, take, &out), 0);
    }
    assert_int_equal(drv_s3_object_finish(object, &out), 0);
    drv_s3_object_destroy(&object);
    if (compression == DRV_S3_NONE) {
        return out;
    }
    assert_int_equal(drv_buf_reserve(&plain, 8 << 20), 0);
    if (compression == DRV_S3_GZIP) {
        z_stream z = {0};
        assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
        z.next_in = (Bytef *)out.data, z.avail_in = (uInt)out.len;
        z.next_out = (Bytef *)plain.data, z.avail_out = (uInt)plain.capacity;
        assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
        assert_int_equal(z.avail_in, 0); // one member, nothing after it
        plain.len = plain.capacity - z.avail_out;
        inflateEnd(&z);
    } else {
        size_t size = ZSTD_decompress(plain.data, plain.capacity, out.data, out.len);
        assert_false(ZSTD_isError(size));
        plain.len = size;
    }
    drv_buf_free(&out);
    return plain;
}

static void test_runs_make_the_object_made_at_once(void **state)
{
    (void)state;
    msgpack_zone zone;
    msgpack_zone_init(&zone, 1 << 20);
    msgpack_object *records = calloc(RECORDS, sizeof *records);
    s_records(&zone, records, RECORDS);
    drv_s3_compression_t compressions[] = {DRV_S3_NONE, DRV_S3_GZIP, DRV_S3_ZSTD};
    drv_s3_format_t formats[] = {DRV_S3_NDJSON, DRV_S3_OTLP_JSON, DRV_S3_OTLP_PROTO};
    for (size_t f = 0; f < 3; f++) {
        drv_buf_t whole = s_make(formats[f], DRV_S3_NONE, records, RECORDS, 0);
        assert_true(whole.len > 0);
        for (size_t c = 0; c < 3; c++) {
            drv_buf_t runs = s_make(formats[f], compressions[c], records, RECORDS, 700);
            if (formats[f] == DRV_S3_OTLP_PROTO) {
                //  Runs are requests of their own, concatenated: longer by
                //  the wrappers each run repeats.
                assert_true(runs.len > whole.len);
            } else if (formats[f] == DRV_S3_OTLP_JSON) {
                //  One request, a resource per run: every record, in order.
                json_error_t error;
                json_t *request = json_loadb(runs.data, runs.len, 0, &error);
                assert_non_null(request);
                json_t *resources = json_object_get(request, "resourceLogs");
                assert_int_equal(json_array_size(resources), (RECORDS + 699) / 700);
                size_t count = 0, index;
                json_t *resource;
                json_array_foreach(resources, index, resource)
                {
                    json_t *logs =
                        json_object_get(json_array_get(json_object_get(resource, "scopeLogs"), 0), "logRecords");
                    count += json_array_size(logs);
                }
                assert_int_equal(count, RECORDS);
                json_decref(request);
            } else {
                assert_int_equal(runs.len, whole.len);
                assert_memory_equal(runs.data, whole.data, whole.len);
            }
            drv_buf_free(&runs);
        }
        drv_buf_free(&whole);
    }
    free(records);
    msgpack_zone_destroy(&zone);
}

static void test_an_empty_object_is_well_formed(void **state)
{
    (void)state;
    drv_buf_t json = s_make(DRV_S3_OTLP_JSON, DRV_S3_NONE, NULL, 0, 0);
    assert_int_equal(json.len, strlen("{\"resourceLogs\":[]}"));
    assert_memory_equal(json.data, "{\"resourceLogs\":[]}", json.len);
    drv_buf_free(&json);
    drv_buf_t zipped = s_make(DRV_S3_NDJSON, DRV_S3_GZIP, NULL, 0, 0);
    assert_int_equal(zipped.len, 0);
    drv_buf_free(&zipped);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_make_the_object_made_at_once),
        cmocka_unit_test(test_an_empty_object_is_well_formed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
