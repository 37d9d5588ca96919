/*  drv_otlp_unpack — OTLP protobuf bytes into the request structs
    (drv_otlp.h): checked first by drv_pbcheck, decoded by protobuf-c into
    one msgpack zone per request (msgpack-c's region allocator: protobuf-c's
    many small allocations come from a few chunks, given back at once). */
#include "drv_otlp.h"
#include "drv_pbcheck.h"

#include <msgpack.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

//  protobuf-c's allocations come from the request's zone (freed whole
//  by drv_otlp_request_free), and a decode that failed for want of memory is
//  told from one that failed on the bytes.
typedef struct {
    msgpack_zone *zone;
    bool short_of_memory;
} unpack_t;

static void *s_alloc(void *data, size_t size)
{
    unpack_t *u = data;
    void *p = msgpack_zone_malloc(u->zone, size);
    if (!p) {
        u->short_of_memory = true;
    }
    return p;
}

static void s_free(void *data, void *p)
{
    (void)data;
    (void)p; // the zone gives everything back at once
}

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
    char why[240];
    if (drv_pbcheck(desc, data, size, why, sizeof why) != 0) {
        snprintf(err, errlen, "malformed protobuf: %s", why);
        return -1;
    }
    //  Decoded structs take about twice the bytes (more for mostly-empty
    //  messages: the zone grows).
    unpack_t u = {.zone = msgpack_zone_new(2 * size + 1024)};
    if (!u.zone) {
        snprintf(err, errlen, "out of memory");
        return DRV_OTLP_NO_MEMORY;
    }
    ProtobufCAllocator allocator = {.alloc = s_alloc, .free = s_free, .allocator_data = &u};
    out->message = protobuf_c_message_unpack(desc, &allocator, size, data);
    if (!out->message) {
        msgpack_zone_free(u.zone);
        snprintf(err, errlen, u.short_of_memory ? "out of memory" : "malformed protobuf");
        return u.short_of_memory ? DRV_OTLP_NO_MEMORY : -1;
    }
    out->zone = u.zone;
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
