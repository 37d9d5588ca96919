/*  drv_grpc_frame — what gRPC puts on top of HTTP/2, for the server
    (receiver:otlp's grpc_endpoint) and the client (exporter:otlp with
    protocol: grpc) alike; no I/O here, so a fuzzer can drive all of it.

    - A message travels as a Length-Prefixed-Message: one flag byte
      (1: compressed with the call's grpc-encoding), four bytes of length
      (big-endian), the message. A unary call's body is exactly one.
    - The outcome travels in trailers: grpc-status (a code below),
      grpc-message (percent-encoded UTF-8), and grpc-status-details-bin (a
      google.rpc.Status, base64): drover puts a google.rpc.RetryInfo there
      when it asks a client to come back later. */
#ifndef DRV_GRPC_FRAME_H
#define DRV_GRPC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  The status codes drover sends or acts on (grpc/doc/statuscodes.md).
enum {
    DRV_GRPC_OK = 0,
    DRV_GRPC_CANCELLED = 1,
    DRV_GRPC_UNKNOWN = 2,
    DRV_GRPC_INVALID_ARGUMENT = 3,
    DRV_GRPC_DEADLINE_EXCEEDED = 4,
    DRV_GRPC_NOT_FOUND = 5,
    DRV_GRPC_RESOURCE_EXHAUSTED = 8,
    DRV_GRPC_ABORTED = 10,
    DRV_GRPC_UNIMPLEMENTED = 12,
    DRV_GRPC_INTERNAL = 13,
    DRV_GRPC_UNAVAILABLE = 14,
};

#define DRV_GRPC_PREFIX 5 // flag byte and length

//  The one message of a unary call's body (size bytes at data). gzip: the
//  call's grpc-encoding is gzip, so a message flagged compressed is
//  inflated (at most max bytes). On DRV_GRPC_OK, *message and *message_size
//  are the message: inside data, or in *inflated (malloc'd; the caller
//  frees it). Otherwise the status code to refuse with, the reason in why
//  (INVALID_ARGUMENT: not one message; RESOURCE_EXHAUSTED: past max;
//  UNIMPLEMENTED: compressed without an encoding to read it).
int drv_grpc_unframe(const void *data, size_t size, bool gzip, size_t max, const void **message, size_t *message_size,
                     char **inflated, char *why, size_t whylen);

//  The prefix of an uncompressed message of size bytes.
void drv_grpc_prefix(uint8_t out[DRV_GRPC_PREFIX], bool compressed, uint32_t size);

//  grpc-message: text percent-encoded as gRPC says (bytes outside 0x20..0x7e
//  and '%'), into out (always NUL-terminated; cut at a whole escape).
void drv_grpc_message_encode(const char *text, char *out, size_t outlen);
//  The reverse, in place.
void drv_grpc_message_decode(char *text);

//  grpc-status-details-bin: google.rpc.Status {code, message, details:
//  [RetryInfo {retry_delay}]} in unpadded base64; malloc'd, NULL out of memory.
char *drv_grpc_status_details(int code, const char *message, int64_t retry_ms);
//  The RetryInfo delay in a grpc-status-details-bin value (padded or not),
//  in milliseconds; -1 when there is none or the value is not one.
int64_t drv_grpc_retry_delay_ms(const char *value, size_t len);

//  The gRPC code's name (UNAVAILABLE), or "code N" in buf.
const char *drv_grpc_code_name(int code, char *buf, size_t buflen);

#endif
