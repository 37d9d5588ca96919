/*  OTLP decoding out of memory (issue 24: one out-of-memory policy for
    input-driven allocation). Every allocation the decoders make is failed
    in turn (the linker wraps malloc and calloc for this binary, and
    msgpack-c's zone creation and growth: the protobuf decode's region):
    each decode either succeeds or says DRV_OTLP_NO_MEMORY, never crashes,
    never reports the request as malformed, and leaks nothing
    (valgrind_otlp_oom). */
#include "drv_otlp.h"
#include "drv_otlp_json.h"

#include <msgpack.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
msgpack_zone *__real_msgpack_zone_new(size_t chunk_size);
void *__real_msgpack_zone_malloc_expand(msgpack_zone *zone, size_t size);

static long s_fail_at; // the allocation to fail, counted from arming (0: none)
static long s_count;

static bool s_fails(void)
{
    return s_fail_at > 0 && ++s_count == s_fail_at;
}

void *__wrap_malloc(size_t size)
{
    return s_fails() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return s_fails() ? NULL : __real_calloc(n, size);
}

//  protobuf bytes decode into a msgpack zone: a new zone, and each chunk it
//  grows by, are allocations too (the zone's fast path takes from a chunk).
msgpack_zone *__wrap_msgpack_zone_new(size_t chunk_size)
{
    return s_fails() ? NULL : __real_msgpack_zone_new(chunk_size);
}

void *__wrap_msgpack_zone_malloc_expand(msgpack_zone *zone, size_t size)
{
    return s_fails() ? NULL : __real_msgpack_zone_malloc_expand(zone, size);
}

static void s_arm(long at)
{
    s_count = 0;
    s_fail_at = at;
}

static const char LOGS[] =
    "{\"resourceLogs\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":\"svc\"}}]}"
    ","
    "\"scopeLogs\":[{\"scope\":{\"name\":\"lib\",\"version\":\"1\",\"attributes\":[{\"key\":\"k\",\"value\":{"
    "\"intValue\":\"7\"}}]},"
    "\"logRecords\":[{\"timeUnixNano\":\"1700000000000000000\",\"severityNumber\":9,\"severityText\":\"INFO\","
    "\"body\":{\"kvlistValue\":{\"values\":[{\"key\":\"a\",\"value\":{\"arrayValue\":{\"values\":[{\"stringValue\":"
    "\"x\"},"
    "null,{\"bytesValue\":\"aGVsbG8=\"},{\"kvlistValue\":{\"values\":[{\"key\":\"deep\",\"value\":{\"boolValue\":true}}"
    "]}}]}}}]}},"
    "\"attributes\":[{\"key\":\"n\",\"value\":{\"doubleValue\":1.5}}],\"traceId\":\"5b8efff798038103d269b633813fc60c\","
    "\"spanId\":\"eee19b7ec3c1b174\"},{\"body\":{\"stringValue\":\"second\"}}]}]}]}";

static const char TRACES[] =
    "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":\"svc\"}}]"
    "},"
    "\"scopeSpans\":[{\"scope\":{\"name\":\"lib\"},\"spans\":[{\"traceId\":\"5b8efff798038103d269b633813fc60c\","
    "\"spanId\":\"eee19b7ec3c1b174\",\"parentSpanId\":\"eee19b7ec3c1b173\",\"name\":\"op\",\"kind\":2,"
    "\"startTimeUnixNano\":\"1\",\"endTimeUnixNano\":\"2\",\"attributes\":[{\"key\":\"a\",\"value\":{\"intValue\":1}}],"
    "\"events\":[{\"name\":\"e\",\"attributes\":[{\"key\":\"b\",\"value\":{\"stringValue\":\"c\"}}]}],"
    "\"links\":[{\"traceId\":\"5b8efff798038103d269b633813fc60c\",\"spanId\":\"eee19b7ec3c1b174\"}],"
    "\"status\":{\"code\":2,\"message\":\"bad\"}}]}]}]}";

//  Fails each allocation of parse in turn until one parse needs no more;
//  returns how many allocations that was.
static long s_every_failure(drv_otlp_signal_t signal, const char *json, const void *proto, size_t proto_size)
{
    long at = 1;
    for (;; at++) {
        drv_otlp_request_t request;
        char err[300] = "";
        s_arm(at);
        int rc = json ? drv_otlp_json_parse(signal, json, strlen(json), &request, err, sizeof err)
                      : drv_otlp_unpack(signal, proto, proto_size, &request, err, sizeof err);
        s_arm(0);
        if (rc == 0) {
            drv_otlp_request_free(&request);
            return at - 1;
        }
        if (rc != DRV_OTLP_NO_MEMORY) {
            fail_msg("allocation %ld failed: rc %d, \"%s\" (not told as out of memory)", at, rc, err);
        }
        assert_null(request.message); // nothing half-built is handed back
        assert_true(at < 100000);
    }
}

//  The request as protobuf bytes (from a parse with no failure).
static size_t s_packed(drv_otlp_signal_t signal, const char *json, uint8_t **out)
{
    drv_otlp_request_t request;
    char err[300];
    assert_int_equal(drv_otlp_json_parse(signal, json, strlen(json), &request, err, sizeof err), 0);
    size_t size = protobuf_c_message_get_packed_size(request.message);
    *out = malloc(size ? size : 1);
    protobuf_c_message_pack(request.message, *out);
    drv_otlp_request_free(&request);
    return size;
}

static void test_json_logs_out_of_memory_anywhere_is_refused_cleanly(void **state)
{
    (void)state;
    assert_true(s_every_failure(DRV_OTLP_LOGS, LOGS, NULL, 0) >= 20);
}

static void test_json_traces_out_of_memory_anywhere_is_refused_cleanly(void **state)
{
    (void)state;
    assert_true(s_every_failure(DRV_OTLP_TRACES, TRACES, NULL, 0) >= 15);
}

static void test_protobuf_out_of_memory_anywhere_is_refused_cleanly(void **state)
{
    (void)state;
    uint8_t *logs = NULL, *traces = NULL;
    size_t logs_size = s_packed(DRV_OTLP_LOGS, LOGS, &logs);
    size_t traces_size = s_packed(DRV_OTLP_TRACES, TRACES, &traces);
    //  protobuf-c decodes into a zone: its creation and each chunk it grows by may fail.
    assert_true(s_every_failure(DRV_OTLP_LOGS, NULL, logs, logs_size) >= 1);
    assert_true(s_every_failure(DRV_OTLP_TRACES, NULL, traces, traces_size) >= 1);
    free(logs);
    free(traces);
}

static void test_malformed_protobuf_is_still_malformed(void **state)
{
    (void)state;
    drv_otlp_request_t request;
    char err[300];
    const uint8_t junk[] = {0x0a, 0x05, 0x01};
    assert_int_equal(drv_otlp_unpack(DRV_OTLP_LOGS, junk, sizeof junk, &request, err, sizeof err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_logs_out_of_memory_anywhere_is_refused_cleanly),
        cmocka_unit_test(test_json_traces_out_of_memory_anywhere_is_refused_cleanly),
        cmocka_unit_test(test_protobuf_out_of_memory_anywhere_is_refused_cleanly),
        cmocka_unit_test(test_malformed_protobuf_is_still_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
