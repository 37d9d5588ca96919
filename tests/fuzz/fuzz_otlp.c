/*  An OTLP/HTTP body as receiver:otlp meets it. The first byte says which:
    bit 0 traces (else logs), bit 1 JSON (else protobuf). Whatever the
    bytes, a request is refused with a reason or becomes records (built as
    objects) that, packed, decode as a batch of exactly the count returned,
    keys unique at every depth (or the request is refused as nesting deeper
    than records may).
    What protobuf-c allocates for an accepted request is never more than
    drv_pbcheck estimated. Those records then go back out as exporter:otlp sends them: the request
    built from them holds as many LogRecords or Spans, packs and unpacks as
    protobuf, and its OTLP/JSON parses back. */
#include "fuzz.h"
#include "fuzz_pbcheck.h"

#include "drv_buf.h"
#include "drv_otlp.h"
#include "drv_otlp_build.h"
#include "drv_otlp_json.h"
#include "drv_otlp_records.h"

#include "drover/drv_batch.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

//  The records as exporter:otlp sends them, in both encodings.
static void s_back_out(drv_otlp_signal_t signal, const msgpack_object *records, size_t n)
{
    drv_otlp_built_t built;
    FUZZ_ASSERT(drv_otlp_build(&built, signal, records, n) == 0);
    FUZZ_ASSERT(drv_otlp_count(&built.request) == n);
    size_t size = protobuf_c_message_get_packed_size(built.request.message);
    uint8_t *wire = malloc(size ? size : 1);
    protobuf_c_message_pack(built.request.message, wire);
    drv_otlp_request_t again;
    char err[300];
    FUZZ_ASSERT(drv_otlp_unpack(signal, wire, size, &again, err, sizeof err) == 0);
    FUZZ_ASSERT(drv_otlp_count(&again) == n);
    drv_otlp_request_free(&again);
    free(wire);
    drv_buf_t json = {0};
    FUZZ_ASSERT(drv_otlp_json_write(&built.request, &json) == 0);
    FUZZ_ASSERT(drv_otlp_json_parse(signal, json.data, json.len, &again, err, sizeof err) == 0);
    FUZZ_ASSERT(drv_otlp_count(&again) == n);
    drv_otlp_request_free(&again);
    drv_buf_free(&json);
    drv_otlp_built_free(&built);
}

//  drv_pbcheck's estimate is an upper bound of what the decode allocates.
static void s_check_estimate(drv_otlp_signal_t signal, const uint8_t *wire, size_t size, bool accepted)
{
    if (accepted) {
        fuzz_check_estimate(signal == DRV_OTLP_LOGS
                                ? &opentelemetry__proto__collector__logs__v1__export_logs_service_request__descriptor
                                : &opentelemetry__proto__collector__trace__v1__export_trace_service_request__descriptor,
                            wire, size);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    drv_otlp_signal_t signal = data[0] & 1 ? DRV_OTLP_TRACES : DRV_OTLP_LOGS;
    drv_otlp_request_t request;
    char err[300] = "";
    int rc = data[0] & 2 ? drv_otlp_json_parse(signal, (const char *)data + 1, size - 1, &request, err, sizeof err)
                         : drv_otlp_unpack(signal, data + 1, size - 1, &request, err, sizeof err);
    if (!(data[0] & 2)) {
        s_check_estimate(signal, data + 1, size - 1, rc == 0);
    }
    if (rc != 0) {
        FUZZ_ASSERT(request.message == NULL);
        FUZZ_ASSERT(err[0]);
        return 0;
    }
    msgpack_zone built_zone;
    msgpack_zone_init(&built_zone, 4096);
    msgpack_object *built;
    int64_t rejected = -1;
    char why[300];
    int n = drv_otlp_to_objects(&request, &built_zone, &built, &rejected, why, sizeof why);
    FUZZ_ASSERT(n >= 0 || (n == -1 && strstr(why, "deeper")));
    FUZZ_ASSERT(rejected >= 0 && (rejected == 0 || why[0]));
    if (n < 0) {
        drv_otlp_request_free(&request);
        msgpack_zone_destroy(&built_zone);
        return 0;
    }
    //  The objects are records: packed as a batch, they decode (keys checked
    //  unique at every depth) to as many.
    msgpack_sbuffer out;
    fuzz_pack_records(built, n, &out);
    drv_otlp_request_free(&request);
    msgpack_zone_destroy(&built_zone);
    msgpack_zone zone;
    msgpack_zone_init(&zone, 4096);
    msgpack_object root;
    const msgpack_object *records;
    char reason[200] = "";
    int got = drv_batch_decode_checked(out.data, out.size, &zone, &root, &records, reason, sizeof reason);
    FUZZ_ASSERT(got == n);
    if (got > 0) {
        s_back_out(signal, records, (size_t)n);
    }
    msgpack_zone_destroy(&zone);
    msgpack_sbuffer_destroy(&out);
    return 0;
}
