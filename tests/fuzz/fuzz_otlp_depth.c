/*  OTLP protobuf nesting (issue 23: 5,000 AnyValue -> ArrayValue levels in
    20 KB overflowed protobuf-c's stack). The input is a recipe, one byte a
    step, for a log record's body (or, with bit 0 of the first byte, a
    span's attribute) nested as deep as the recipe is long: each step wraps
    the value in an ArrayValue (2 levels), a KeyValueList (3 levels) or an
    ArrayValue of two copies. Whatever the depth, drv_otlp_unpack never
    crashes, accepts exactly the requests nested at most
    DRV_PBCHECK_MAX_DEPTH deep, and what it accepts becomes records. */
#include "fuzz.h"

#include "drv_buf.h"
#include "drv_otlp.h"
#include "drv_otlp_records.h"
#include "drv_pbcheck.h"

#include <stdlib.h>
#include <string.h>

//  A length-delimited field: tag, length, then what is in out. Owned by out.
static void s_wrap(drv_buf_t *out, unsigned field)
{
    uint8_t head[16];
    size_t n = 0;
    head[n++] = (uint8_t)(field << 3 | 2);
    for (uint64_t len = out->len;; len >>= 7) {
        head[n++] = (uint8_t)((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
        if (len <= 0x7f) {
            break;
        }
    }
    drv_buf_t wrapped = {0};
    drv_buf_append(&wrapped, head, n);
    drv_buf_append(&wrapped, out->data, out->len);
    drv_buf_free(out);
    *out = wrapped;
}

//  out holds the fields of an AnyValue; returns the levels it adds below itself.
static int s_step(drv_buf_t *out, uint8_t op)
{
    switch (op % 3) {
    case 0: // AnyValue{array_value: ArrayValue{values: [x]}}
        s_wrap(out, 1);
        s_wrap(out, 5);
        return 2;
    case 1: { // AnyValue{kvlist_value: KeyValueList{values: [KeyValue{key: "k", value: x}]}}
        s_wrap(out, 2);
        drv_buf_t kv = {0};
        drv_buf_append(&kv, "\x0a\x01k", 3);
        drv_buf_append(&kv, out->data, out->len);
        drv_buf_free(out);
        *out = kv;
        s_wrap(out, 1);
        s_wrap(out, 6);
        return 3;
    }
    default: { // AnyValue{array_value: ArrayValue{values: [x, x]}}
        s_wrap(out, 1);
        drv_buf_t twice = {0};
        drv_buf_append(&twice, out->data, out->len);
        drv_buf_append(&twice, out->data, out->len);
        drv_buf_free(out);
        *out = twice;
        s_wrap(out, 5);
        return 2;
    }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 20000) {
        return 0;
    }
    drv_otlp_signal_t signal = data[0] & 1 ? DRV_OTLP_TRACES : DRV_OTLP_LOGS;
    drv_buf_t value = {0};
    drv_buf_append(&value, "\x0a\x01x", 3); // AnyValue{string_value: "x"}
    int depth = 0;
    int copies = 0;
    for (size_t i = 1; i < size; i++) {
        copies += data[i] % 3 == 2;
        if (copies > 12) { // two copies a step: the size doubles
            break;
        }
        depth += s_step(&value, data[i]);
    }
    //  The levels above the innermost value: request -> resource -> scope -> record.
    if (signal == DRV_OTLP_LOGS) {
        s_wrap(&value, 5); // LogRecord.body
        depth += 4;
    } else {
        s_wrap(&value, 2); // KeyValue.value
        drv_buf_t kv = {0};
        drv_buf_append(&kv, "\x0a\x01k", 3);
        drv_buf_append(&kv, value.data, value.len);
        drv_buf_free(&value);
        value = kv;
        s_wrap(&value, 9); // Span.attributes
        drv_buf_append(&value,
                       "\x0a\x10"
                       "0123456789abcdef"
                       "\x12\x08"
                       "01234567",
                       28); // ids
        depth += 5;
    }
    s_wrap(&value, 2); // ScopeLogs.log_records / ScopeSpans.spans
    s_wrap(&value, 2); // ResourceLogs.scope_logs / ResourceSpans.scope_spans
    s_wrap(&value, 1); // the request's resource_logs / resource_spans
    drv_otlp_request_t request;
    char err[300] = "";
    int rc = drv_otlp_unpack(signal, value.data, value.len, &request, err, sizeof err);
    FUZZ_ASSERT((rc == 0) == (depth <= DRV_PBCHECK_MAX_DEPTH));
    if (rc == 0) {
        msgpack_zone zone;
        msgpack_zone_init(&zone, 4096);
        msgpack_object *records;
        int64_t rejected = 0;
        char why[300];
        FUZZ_ASSERT(drv_otlp_to_objects(&request, &zone, &records, &rejected, why, sizeof why) == 1);
        drv_otlp_request_free(&request);
        msgpack_zone_destroy(&zone);
    } else {
        FUZZ_ASSERT(strstr(err, "nested deeper") != NULL);
    }
    drv_buf_free(&value);
    return 0;
}
