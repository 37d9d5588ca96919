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

/*  The message is built inside out, so it is kept back to front: a field's
    head is prepended by appending it reversed, and the bytes are turned round
    once at the end. Each step then costs only what it adds, and a recipe of
    20,000 steps runs in milliseconds, not in the fuzzer's 10 s timeout. */
#define FUZZ_MAX_MESSAGE (1 << 20) // bytes: beyond this the recipe stops

//  Prepends len bytes of what to the message rev holds back to front.
static void s_prepend(drv_buf_t *rev, const char *what, size_t len)
{
    for (size_t i = len; i-- > 0;) {
        drv_buf_append(rev, &what[i], 1);
    }
}

//  Makes the whole message a length-delimited field: tag, length, message.
static void s_wrap(drv_buf_t *rev, unsigned field)
{
    char head[16];
    size_t n = 0;
    head[n++] = (char)(field << 3 | 2);
    for (uint64_t len = rev->len;; len >>= 7) {
        head[n++] = (char)((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
        if (len <= 0x7f) {
            break;
        }
    }
    s_prepend(rev, head, n);
}

//  rev holds the fields of an AnyValue; returns the levels it adds below itself.
static int s_step(drv_buf_t *rev, uint8_t op)
{
    switch (op % 3) {
    case 0: // AnyValue{array_value: ArrayValue{values: [x]}}
        s_wrap(rev, 1);
        s_wrap(rev, 5);
        return 2;
    case 1: // AnyValue{kvlist_value: KeyValueList{values: [KeyValue{key: "k", value: x}]}}
        s_wrap(rev, 2);
        s_prepend(rev, "\x0a\x01k", 3);
        s_wrap(rev, 1);
        s_wrap(rev, 6);
        return 3;
    default: // AnyValue{array_value: ArrayValue{values: [x, x]}}
        s_wrap(rev, 1);
        drv_buf_reserve(rev, rev->len);
        memcpy(rev->data + rev->len, rev->data, rev->len);
        rev->len *= 2;
        s_wrap(rev, 5);
        return 2;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 20000) {
        return 0;
    }
    drv_otlp_signal_t signal = data[0] & 1 ? DRV_OTLP_TRACES : DRV_OTLP_LOGS;
    drv_buf_t rev = {0};
    s_prepend(&rev, "\x0a\x01x", 3); // AnyValue{string_value: "x"}
    int depth = 0;
    int copies = 0;
    for (size_t i = 1; i < size && rev.len <= FUZZ_MAX_MESSAGE; i++) {
        copies += data[i] % 3 == 2;
        if (copies > 12) { // two copies a step: the size doubles
            break;
        }
        depth += s_step(&rev, data[i]);
    }
    //  The levels above the innermost value: request -> resource -> scope -> record.
    if (signal == DRV_OTLP_LOGS) {
        s_wrap(&rev, 5); // LogRecord.body
        depth += 4;
    } else {
        s_wrap(&rev, 2); // KeyValue.value
        s_prepend(&rev, "\x0a\x01k", 3);
        s_wrap(&rev, 9); // Span.attributes
        static const char ids[] = "\x0a\x10"
                                  "0123456789abcdef"
                                  "\x12\x08"
                                  "01234567";
        drv_buf_t tail = {0}; // the ids come after the attributes
        s_prepend(&tail, ids, 28);
        drv_buf_append(&tail, rev.data, rev.len);
        drv_buf_free(&rev);
        rev = tail;
        depth += 5;
    }
    s_wrap(&rev, 2); // ScopeLogs.log_records / ScopeSpans.spans
    s_wrap(&rev, 2); // ResourceLogs.scope_logs / ResourceSpans.scope_spans
    s_wrap(&rev, 1); // the request's resource_logs / resource_spans
    drv_buf_t value = {0};
    drv_buf_reserve(&value, rev.len);
    for (size_t i = 0; i < rev.len; i++) {
        value.data[i] = rev.data[rev.len - 1 - i];
    }
    value.len = rev.len;
    drv_buf_free(&rev);
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
