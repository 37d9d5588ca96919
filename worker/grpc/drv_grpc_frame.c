/*  drv_grpc_frame — see drv_grpc_frame.h. */
#include "drv_grpc_frame.h"
#include "drv_gzip.h"

#include "google/rpc/error_details.pb-c.h"
#include "google/rpc/status.pb-c.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_INFO_TYPE "type.googleapis.com/google.rpc.RetryInfo"

int drv_grpc_unframe(const void *data, size_t size, bool gzip, size_t max, const void **message, size_t *message_size,
                     char **inflated, char *why, size_t whylen)
{
    const uint8_t *bytes = data;
    *inflated = NULL;
    if (size < DRV_GRPC_PREFIX) {
        snprintf(why, whylen, "the request holds no gRPC message (%zu bytes, fewer than a message's prefix)", size);
        return DRV_GRPC_INVALID_ARGUMENT;
    }
    if (bytes[0] > 1) {
        snprintf(why, whylen, "gRPC message flag %u (0: plain, 1: compressed)", bytes[0]);
        return DRV_GRPC_INVALID_ARGUMENT;
    }
    uint32_t length = (uint32_t)bytes[1] << 24 | (uint32_t)bytes[2] << 16 | (uint32_t)bytes[3] << 8 | bytes[4];
    if ((size_t)length > max && !bytes[0]) {
        snprintf(why, whylen, "gRPC message of %u bytes, larger than %zu", length, max);
        return DRV_GRPC_RESOURCE_EXHAUSTED;
    }
    if ((size_t)length != size - DRV_GRPC_PREFIX) {
        snprintf(why, whylen, "a unary call carries one gRPC message: its prefix says %u bytes, the body has %zu",
                 length, size - DRV_GRPC_PREFIX);
        return DRV_GRPC_INVALID_ARGUMENT;
    }
    *message = bytes + DRV_GRPC_PREFIX;
    *message_size = length;
    if (!bytes[0]) {
        return DRV_GRPC_OK;
    }
    if (!gzip) {
        snprintf(why, whylen, "a compressed gRPC message, but grpc-encoding names no compression (gzip is taken)");
        return DRV_GRPC_UNIMPLEMENTED;
    }
    drv_gzip_result_t rc = drv_gzip_inflate(*message, length, max, inflated, message_size);
    if (rc == DRV_GZIP_TOO_LARGE) {
        snprintf(why, whylen, "gRPC message larger than %zu bytes once gunzipped", max);
    } else if (rc != DRV_GZIP_OK) {
        snprintf(why, whylen, "grpc-encoding says gzip; the message is not");
    }
    if (rc != DRV_GZIP_OK) {
        free(*inflated);
        *inflated = NULL;
        return rc == DRV_GZIP_TOO_LARGE ? DRV_GRPC_RESOURCE_EXHAUSTED : DRV_GRPC_INVALID_ARGUMENT;
    }
    *message = *inflated;
    return DRV_GRPC_OK;
}

void drv_grpc_prefix(uint8_t out[DRV_GRPC_PREFIX], bool compressed, uint32_t size)
{
    out[0] = compressed;
    out[1] = (uint8_t)(size >> 24);
    out[2] = (uint8_t)(size >> 16);
    out[3] = (uint8_t)(size >> 8);
    out[4] = (uint8_t)size;
}

void drv_grpc_message_encode(const char *text, char *out, size_t outlen)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t at = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        bool plain = *c >= 0x20 && *c <= 0x7e && *c != '%';
        if (at + (plain ? 1 : 3) >= outlen) {
            break;
        }
        if (plain) {
            out[at++] = (char)*c;
        } else {
            out[at++] = '%';
            out[at++] = hex[*c >> 4];
            out[at++] = hex[*c & 15];
        }
    }
    if (outlen) {
        out[at] = 0;
    }
}

static int s_hex(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

void drv_grpc_message_decode(char *text)
{
    char *to = text;
    for (const char *c = text; *c; c++) {
        int hi, lo;
        if (*c == '%' && (hi = s_hex(c[1])) >= 0 && (lo = s_hex(c[2])) >= 0) {
            *to++ = (char)(hi << 4 | lo);
            c += 2;
        } else {
            *to++ = *c;
        }
    }
    *to = 0;
}

char *drv_grpc_status_details(int code, const char *message, int64_t retry_ms)
{
    Google__Protobuf__Duration delay = GOOGLE__PROTOBUF__DURATION__INIT;
    delay.seconds = retry_ms / 1000;
    delay.nanos = (int32_t)(retry_ms % 1000 * 1000000);
    Google__Rpc__RetryInfo retry = GOOGLE__RPC__RETRY_INFO__INIT;
    retry.retry_delay = &delay;
    uint8_t packed_retry[64];
    Google__Protobuf__Any any = GOOGLE__PROTOBUF__ANY__INIT;
    any.type_url = RETRY_INFO_TYPE;
    any.value.len = google__rpc__retry_info__pack(&retry, packed_retry);
    any.value.data = packed_retry;
    Google__Protobuf__Any *details[] = {&any};
    Google__Rpc__Status status = GOOGLE__RPC__STATUS__INIT;
    status.code = code;
    status.message = (char *)message;
    status.n_details = retry_ms > 0 ? 1 : 0;
    status.details = details;
    size_t size = google__rpc__status__get_packed_size(&status);
    uint8_t *packed = malloc(size + 1);
    char *text = malloc(4 * (size / 3 + 1) + 1);
    if (!packed || !text) {
        free(packed);
        free(text);
        return NULL;
    }
    google__rpc__status__pack(&status, packed);
    int len = EVP_EncodeBlock((unsigned char *)text, packed, (int)size);
    while (len > 0 && text[len - 1] == '=') {
        len--; // gRPC sends -bin values unpadded
    }
    text[len] = 0;
    free(packed);
    return text;
}

int64_t drv_grpc_retry_delay_ms(const char *value, size_t len)
{
    while (len > 0 && value[len - 1] == '=') {
        len--;
    }
    if (len == 0 || len > 4096 || len % 4 == 1) {
        return -1;
    }
    char padded[4100];
    memcpy(padded, value, len);
    size_t pad = (4 - len % 4) % 4;
    memset(padded + len, '=', pad);
    padded[len + pad] = 0;
    unsigned char bytes[3 * sizeof padded / 4 + 1];
    int n = EVP_DecodeBlock(bytes, (const unsigned char *)padded, (int)(len + pad));
    if (n < 0) {
        return -1;
    }
    n -= (int)pad; // EVP_DecodeBlock counts the padding as zero bytes
    Google__Rpc__Status *status = google__rpc__status__unpack(NULL, (size_t)n, bytes);
    int64_t ms = -1;
    for (size_t i = 0; status && i < status->n_details && ms < 0; i++) {
        const Google__Protobuf__Any *any = status->details[i];
        if (!any->type_url || strcmp(any->type_url, RETRY_INFO_TYPE) != 0) {
            continue;
        }
        Google__Rpc__RetryInfo *retry = google__rpc__retry_info__unpack(NULL, any->value.len, any->value.data);
        if (retry && retry->retry_delay && retry->retry_delay->seconds >= 0 && retry->retry_delay->nanos >= 0 &&
            retry->retry_delay->seconds < 86400) {
            ms = retry->retry_delay->seconds * 1000 + retry->retry_delay->nanos / 1000000;
        }
        if (retry) {
            google__rpc__retry_info__free_unpacked(retry, NULL);
        }
    }
    if (status) {
        google__rpc__status__free_unpacked(status, NULL);
    }
    return ms;
}

const char *drv_grpc_code_name(int code, char *buf, size_t buflen)
{
    static const char *const names[] = {
        "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
        "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
        "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
        "DATA_LOSS", "UNAUTHENTICATED"};
    if (code >= 0 && code < (int)(sizeof names / sizeof *names)) {
        return names[code];
    }
    snprintf(buf, buflen, "code %d", code);
    return buf;
}
