/*  A gRPC call's body as receiver:otlp's gRPC server meets it, and the
    trailers exporter:otlp reads: the first byte says whether the call's
    grpc-encoding is gzip (bit 0) and which service it is (bits 1-2), the
    second how large a message may be. Whatever the bytes, unframing either
    refuses with a status and a reason or gives a message no larger than
    the limit, which then decodes as that service's request or is refused
    with a reason. The same bytes as a grpc-status-details-bin value give
    no delay or a sane one; a grpc-message percent-encoded decodes back to
    itself; RetryInfo written is RetryInfo read. */
#include "fuzz.h"

#include "drv_grpc_frame.h"
#include "drv_otlp.h"
#include "drv_otlp_records.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    bool gzip = data[0] & 1;
    drv_otlp_signal_t signal = (drv_otlp_signal_t)((data[0] >> 1) % 3);
    size_t max = (size_t)data[1] * 64 + 5;
    data += 2;
    size -= 2;

    const void *message = NULL;
    size_t message_size = 0;
    char *inflated = NULL;
    char why[300] = "";
    int code = drv_grpc_unframe(data, size, gzip, max, &message, &message_size, &inflated, why, sizeof why);
    if (code != DRV_GRPC_OK) {
        FUZZ_ASSERT(why[0] && inflated == NULL);
        FUZZ_ASSERT(code == DRV_GRPC_INVALID_ARGUMENT || code == DRV_GRPC_RESOURCE_EXHAUSTED ||
                    code == DRV_GRPC_UNIMPLEMENTED);
    } else {
        FUZZ_ASSERT(message_size <= max || (!inflated && message_size == size - DRV_GRPC_PREFIX));
        FUZZ_ASSERT(inflated ? message_size <= max : message_size == size - DRV_GRPC_PREFIX);
        drv_otlp_request_t request;
        char err[300] = "";
        if (drv_otlp_unpack(signal, message, message_size, &request, err, sizeof err) == 0) {
            msgpack_zone zone;
            msgpack_zone_init(&zone, 4096);
            msgpack_object *records;
            int64_t rejected = -1;
            int n = drv_otlp_to_objects(&request, &zone, &records, &rejected, why, sizeof why);
            FUZZ_ASSERT(n < 0 || (size_t)n + (size_t)rejected == drv_otlp_count(&request));
            msgpack_zone_destroy(&zone);
            drv_otlp_request_free(&request);
        } else {
            FUZZ_ASSERT(err[0]);
        }
        free(inflated);
    }

    int64_t delay = drv_grpc_retry_delay_ms((const char *)data, size);
    FUZZ_ASSERT(delay == -1 || (delay >= 0 && delay < 86400 * 1000));

    char text[128];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, n);
    text[n] = 0;
    char encoded[3 * sizeof text + 1];
    drv_grpc_message_encode(text, encoded, sizeof encoded);
    drv_grpc_message_decode(encoded);
    FUZZ_ASSERT(!strcmp(encoded, text));

    int64_t ms = size >= 4 ? (int64_t)(data[0] | data[1] << 8 | data[2] << 16) : 1;
    char *details = drv_grpc_status_details(DRV_GRPC_UNAVAILABLE, text, ms);
    FUZZ_ASSERT(details != NULL);
    FUZZ_ASSERT(drv_grpc_retry_delay_ms(details, strlen(details)) == (ms > 0 ? ms : -1));
    free(details);
    return 0;
}
