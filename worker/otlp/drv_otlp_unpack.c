/*  drv_otlp_unpack — OTLP protobuf bytes into the request structs
    (drv_otlp.h): decoded by drv_pbunpack into one msgpack zone per request
    (msgpack-c's region allocator: protobuf-c's many small allocations come
    from a few chunks, given back at once). */
#include "drv_otlp.h"
#include "drv_pbunpack.h"

#include <msgpack.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

int drv_otlp_unpack(drv_otlp_signal_t signal, const void *data, size_t size, drv_otlp_request_t *out, char *err,
                    size_t errlen)
{
    out->signal = signal;
    out->message = NULL;
    out->zone = NULL;
    out->observed_ns = 0; // the receiver says when it took it
    const ProtobufCMessageDescriptor *desc =
        signal == DRV_OTLP_LOGS ? &opentelemetry__proto__collector__logs__v1__export_logs_service_request__descriptor
        : signal == DRV_OTLP_TRACES
            ? &opentelemetry__proto__collector__trace__v1__export_trace_service_request__descriptor
            : &opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__descriptor;
    //  Decoded structs take about twice the bytes (more for mostly-empty
    //  messages: the zone grows).
    msgpack_zone *zone = msgpack_zone_new(2 * size + 1024);
    if (!zone) {
        snprintf(err, errlen, "out of memory");
        return DRV_OTLP_NO_MEMORY;
    }
    int rc = drv_pbunpack(desc, data, size, zone, &out->message, err, errlen);
    if (rc != 0) {
        msgpack_zone_free(zone);
        return rc == DRV_PBUNPACK_NO_MEMORY ? DRV_OTLP_NO_MEMORY : -1;
    }
    out->zone = zone;
    return 0;
}

void drv_otlp_request_free(drv_otlp_request_t *request)
{
    if (request->zone) {
        msgpack_zone_free(request->zone); // the whole message with it
        request->zone = NULL;
    } else if (request->message) {
        protobuf_c_message_free_unpacked(request->message, NULL);
    }
    request->message = NULL;
}
