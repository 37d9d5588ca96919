/*  An OTLP/HTTP metrics body as receiver:otlp meets it: the first byte's
    bit 0 says JSON (else protobuf). Whatever
    the bytes, the request is refused with a reason or becomes one record
    per data point (docs/operations.md, OTLP) that, packed, decodes through drv_batch
    (every key checked unique at every depth, nesting bounded) as a batch of
    exactly the count returned; what protobuf-c allocates for an accepted
    request is never more than drv_pbcheck estimated. Those records then go
    back out as exporter:otlp sends them: grouped into metrics, every point
    there, and the request packs and unpacks, and its OTLP/JSON parses back. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    bool json = data[0] & 1;
    data++;
    size--;
    drv_otlp_request_t request;
    char err[300] = "";
    int rc = json ? drv_otlp_json_parse(DRV_OTLP_METRICS, (const char *)data, size, &request, err, sizeof err)
                  : drv_otlp_unpack(DRV_OTLP_METRICS, data, size, &request, err, sizeof err);
    if (rc != 0) {
        FUZZ_ASSERT(request.message == NULL && err[0]);
        return 0;
    }
    if (!json) {
        fuzz_check_estimate(&opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__descriptor,
                            data, size);
    }

    msgpack_zone built_zone;
    msgpack_zone_init(&built_zone, 4096);
    msgpack_object *built;
    int64_t rejected = -1;
    char why[300];
    int n = drv_otlp_to_objects(&request, &built_zone, &built, &rejected, why, sizeof why);
    FUZZ_ASSERT(n >= 0 || (n == -1 && strstr(why, "deeper")));
    FUZZ_ASSERT(rejected >= 0 && (rejected == 0 || why[0]));
    FUZZ_ASSERT(n < 0 || (size_t)n + (size_t)rejected == drv_otlp_count(&request));
    if (n > 0) {
        msgpack_sbuffer out;
        fuzz_pack_records(built, n, &out);
        msgpack_zone zone;
        msgpack_zone_init(&zone, 4096);
        msgpack_object root;
        const msgpack_object *records;
        char reason[200] = "";
        FUZZ_ASSERT(drv_batch_decode(out.data, out.size, &zone, &root, &records, reason, sizeof reason) == n);
        msgpack_zone_destroy(&zone);
        msgpack_sbuffer_destroy(&out);
    }
    drv_otlp_request_free(&request);
    msgpack_zone_destroy(&built_zone);
    return 0;
}
