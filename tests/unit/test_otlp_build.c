/*  drv_otlp_build: records are grouped back under one ResourceLogs per
    resource (attributes and schema URL) and one ScopeLogs per scope of it,
    whether the records of a group come together or interleaved with
    others, and however many groups there are (issue 24: the groups were
    found by a linear scan of packed keys). */
#include "drv_otlp_build.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void s_str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str_with_body(pk, s, strlen(s));
}

//  A log record of resource service=service and scope scope.
static void s_record(msgpack_packer *pk, const char *service, const char *scope, int n)
{
    char body[32];
    snprintf(body, sizeof body, "record %d", n);
    msgpack_pack_map(pk, 4);
    s_str(pk, "signal");
    s_str(pk, "log");
    s_str(pk, "body");
    s_str(pk, body);
    s_str(pk, "resource");
    msgpack_pack_map(pk, 1);
    s_str(pk, "service.name");
    s_str(pk, service);
    s_str(pk, "scope");
    msgpack_pack_map(pk, 3);
    s_str(pk, "name");
    s_str(pk, scope);
    s_str(pk, "version");
    s_str(pk, "");
    s_str(pk, "attributes");
    msgpack_pack_map(pk, 0);
}

//  The records packed by fill, unpacked into zone (each its own objects).
static size_t s_records(msgpack_zone *zone, msgpack_sbuffer *buf, msgpack_object *out, size_t max)
{
    size_t offset = 0, n = 0;
    while (n < max) {
        msgpack_unpack_return rc = msgpack_unpack(buf->data, buf->size, &offset, zone, &out[n]);
        if (rc != MSGPACK_UNPACK_SUCCESS && rc != MSGPACK_UNPACK_EXTRA_BYTES) {
            break;
        }
        n++;
        if (rc == MSGPACK_UNPACK_SUCCESS) {
            break; // the last
        }
    }
    return n;
}

static void test_interleaved_records_are_grouped_by_resource_and_scope(void **state)
{
    (void)state;
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
    const char *order[][2] = {{"a", "x"}, {"a", "x"}, {"b", "x"}, {"a", "y"}, {"a", "x"}, {"b", "x"}};
    for (int i = 0; i < 6; i++) {
        s_record(&pk, order[i][0], order[i][1], i);
    }
    msgpack_zone zone;
    msgpack_zone_init(&zone, 4096);
    msgpack_object records[6];
    assert_int_equal(s_records(&zone, &buf, records, 6), 6);
    drv_otlp_built_t built;
    assert_int_equal(drv_otlp_build(&built, DRV_OTLP_LOGS, records, 6), 0);
    otlp_logs_request_t *req = built.request.logs;
    assert_int_equal(req->n_resource_logs, 2);
    otlp_resource_logs_t *a = req->resource_logs[0], *b = req->resource_logs[1];
    assert_string_equal(a->resource->attributes[0]->value->string_value, "a");
    assert_string_equal(b->resource->attributes[0]->value->string_value, "b");
    assert_int_equal(a->n_scope_logs, 2); // x and y
    assert_string_equal(a->scope_logs[0]->scope->name, "x");
    assert_int_equal(a->scope_logs[0]->n_log_records, 3); // records 0, 1 and 4, in order
    assert_string_equal(a->scope_logs[0]->log_records[2]->body->string_value, "record 4");
    assert_int_equal(a->scope_logs[1]->n_log_records, 1);
    assert_int_equal(b->n_scope_logs, 1);
    assert_int_equal(b->scope_logs[0]->n_log_records, 2);
    drv_otlp_built_free(&built);
    msgpack_zone_destroy(&zone);
    msgpack_sbuffer_destroy(&buf);
}

#define MANY 3000

static void test_many_resources_each_get_their_group(void **state)
{
    (void)state;
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
    for (int i = 0; i < MANY; i++) {
        char service[32];
        snprintf(service, sizeof service, "service-%d", i % (MANY / 2)); // each twice, far apart
        s_record(&pk, service, "s", i);
    }
    msgpack_zone zone;
    msgpack_zone_init(&zone, 65536);
    static msgpack_object records[MANY];
    assert_int_equal(s_records(&zone, &buf, records, MANY), MANY);
    drv_otlp_built_t built;
    assert_int_equal(drv_otlp_build(&built, DRV_OTLP_LOGS, records, MANY), 0);
    otlp_logs_request_t *req = built.request.logs;
    assert_int_equal(req->n_resource_logs, MANY / 2);
    for (size_t r = 0; r < req->n_resource_logs; r++) {
        char service[32];
        snprintf(service, sizeof service, "service-%zu", r);
        assert_string_equal(req->resource_logs[r]->resource->attributes[0]->value->string_value, service);
        assert_int_equal(req->resource_logs[r]->n_scope_logs, 1);
        assert_int_equal(req->resource_logs[r]->scope_logs[0]->n_log_records, 2);
    }
    drv_otlp_built_free(&built);
    msgpack_zone_destroy(&zone);
    msgpack_sbuffer_destroy(&buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interleaved_records_are_grouped_by_resource_and_scope),
        cmocka_unit_test(test_many_resources_each_get_their_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
