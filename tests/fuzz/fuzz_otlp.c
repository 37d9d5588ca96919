/*  An OTLP/HTTP body as receiver:otlp meets it. The first byte says which:
    bit 0 traces (else logs), bit 1 JSON (else protobuf). Whatever the
    bytes, a request is refused with a reason or becomes records that decode
    as a batch of exactly the count returned (a record nests no deeper than
    records may, or the whole batch is refused at emit, as in the node). */
#include "fuzz.h"

#include "drv_otlp.h"
#include "drv_otlp_json.h"
#include "drv_otlp_records.h"

#include "drover/drv_batch.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    drv_otlp_signal_t signal = data[0] & 1 ? DRV_OTLP_TRACES : DRV_OTLP_LOGS;
    drv_otlp_request_t request;
    char err[300] = "";
    int rc = data[0] & 2 ? drv_otlp_json_parse(signal, (const char *)data + 1, size - 1, &request, err, sizeof err)
                         : drv_otlp_unpack(signal, data + 1, size - 1, &request);
    if (rc != 0) {
        FUZZ_ASSERT(request.message == NULL);
        FUZZ_ASSERT(!(data[0] & 2) || err[0]);
        return 0;
    }
    msgpack_sbuffer out;
    msgpack_sbuffer_init(&out);
    int64_t rejected = -1;
    char why[300];
    int n = drv_otlp_to_records(&request, &out, &rejected, why, sizeof why);
    drv_otlp_request_free(&request);
    FUZZ_ASSERT(n >= 0 && rejected >= 0 && (rejected == 0 || why[0]));
    msgpack_zone zone;
    msgpack_zone_init(&zone, 4096);
    msgpack_object root;
    const msgpack_object *records;
    char reason[200] = "";
    int got = drv_batch_decode(out.data, out.size, &zone, &root, &records, reason, sizeof reason);
    FUZZ_ASSERT(got == n || strstr(reason, "deep"));
    msgpack_zone_destroy(&zone);
    msgpack_sbuffer_destroy(&out);
    return 0;
}
