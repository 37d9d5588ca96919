/*  drv_export_grpc — what posting a batch as a unary gRPC call adds to
    drv_export_post (exporter:otlp with protocol: grpc): HTTP/2 (with prior
    knowledge for h2c, ALPN h2 over TLS), the message framed (flag 1 when
    gzip'd, with grpc-encoding: gzip), the gRPC headers, and the outcome
    read from grpc-status, grpc-message and RetryInfo, in the trailers or a
    Trailers-Only answer. Which codes are retried follows the OTLP
    specification: UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, CANCELLED,
    OUT_OF_RANGE, DATA_LOSS, and RESOURCE_EXHAUSTED when the server said
    when to come back (RetryInfo). */
#include "drv_export_internal.h"
#include "drv_grpc_frame.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int drv_export_grpc_frame(char **body, size_t *size, bool compressed)
{
    char *framed = malloc(*size + DRV_GRPC_PREFIX);
    if (!framed) {
        return -1;
    }
    drv_grpc_prefix((uint8_t *)framed, compressed, (uint32_t)*size);
    memcpy(framed + DRV_GRPC_PREFIX, *body, *size);
    free(*body);
    *body = framed;
    *size += DRV_GRPC_PREFIX;
    return 0;
}

//  Every header line and trailer: the grpc-* ones are kept.
static size_t s_on_header(char *line, size_t size, size_t count, void *arg)
{
    batch_t *batch = arg;
    size_t n = size * count;
    size_t len = n;
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n')) {
        len--;
    }
    const char *colon = memchr(line, ':', len);
    if (!colon) {
        return n;
    }
    size_t name = (size_t)(colon - line);
    const char *value = colon + 1;
    while (value < line + len && *value == ' ') {
        value++;
    }
    size_t value_len = (size_t)(line + len - value);
    if (name == 11 && !strncasecmp(line, "grpc-status", 11)) {
        batch->grpc_status = 0;
        for (size_t i = 0; i < value_len && isdigit((unsigned char)value[i]) && batch->grpc_status < 1000; i++) {
            batch->grpc_status = batch->grpc_status * 10 + (value[i] - '0');
        }
    } else if (name == 12 && !strncasecmp(line, "grpc-message", 12)) {
        size_t kept = value_len < sizeof batch->grpc_message - 1 ? value_len : sizeof batch->grpc_message - 1;
        memcpy(batch->grpc_message, value, kept);
        batch->grpc_message[kept] = 0;
        drv_grpc_message_decode(batch->grpc_message);
    } else if (name == 23 && !strncasecmp(line, "grpc-status-details-bin", 23)) {
        batch->grpc_retry_ms = drv_grpc_retry_delay_ms(value, value_len);
    }
    return n;
}

struct curl_slist *drv_export_grpc_setup(CURL *easy, batch_t *batch, const char *url, bool gzip, int64_t timeout_ms,
                                         struct curl_slist *headers)
{
    batch->grpc_status = -1;
    batch->grpc_message[0] = 0;
    batch->grpc_retry_ms = -1;
    bool tls = !strncmp(url, "https://", 8);
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, tls ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, s_on_header);
    //  One connection per call: Debian 12's libcurl (7.88.1) fails a second
    //  request on an HTTP/2 connection, reused or multiplexed ("Error in the
    //  HTTP2 framing layer", curl's own command line too), so none is
    //  reused, and the multi handle does not multiplex (drv_export_new).
    curl_easy_setopt(easy, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, batch);
    char timeout[40];
    snprintf(timeout, sizeof timeout, "grpc-timeout: %lldm", (long long)timeout_ms);
    headers = curl_slist_append(headers, "Content-Type: application/grpc");
    headers = curl_slist_append(headers, "TE: trailers");
    headers = curl_slist_append(headers, timeout);
    if (gzip) {
        headers = curl_slist_append(headers, "grpc-encoding: gzip");
    }
    return headers;
}

drv_export_verdict_t drv_export_grpc_verdict(const batch_t *batch, long http_status, char *why, size_t whylen,
                                             int64_t *retry_after_ms)
{
    *retry_after_ms = 0;
    char name[32];
    if (http_status != 200) {
        //  Not a gRPC answer: HTTP's status as gRPC maps it (429, 502-504: UNAVAILABLE).
        bool again = http_status == 429 || http_status == 502 || http_status == 503 || http_status == 504;
        snprintf(why, whylen, "answered HTTP %ld, not a gRPC answer%s", http_status, again ? " (UNAVAILABLE)" : "");
        return again ? DRV_EXPORT_RETRY : DRV_EXPORT_DROP;
    }
    if (batch->grpc_status < 0) {
        snprintf(why, whylen, "answered without grpc-status (not a gRPC server?)");
        return DRV_EXPORT_DROP;
    }
    if (batch->grpc_status == DRV_GRPC_OK) {
        return DRV_EXPORT_DONE;
    }
    snprintf(why, whylen, "answered %s%s%s", drv_grpc_code_name(batch->grpc_status, name, sizeof name),
             batch->grpc_message[0] ? ": " : "", batch->grpc_message);
    switch (batch->grpc_status) {
    case DRV_GRPC_RESOURCE_EXHAUSTED:
        if (batch->grpc_retry_ms < 0) {
            return DRV_EXPORT_DROP; // no RetryInfo: the server says retrying will not help
        }
        // fall through
    case DRV_GRPC_UNAVAILABLE:
    case DRV_GRPC_DEADLINE_EXCEEDED:
    case DRV_GRPC_ABORTED:
    case DRV_GRPC_CANCELLED:
    case 11: // OUT_OF_RANGE
    case 15: // DATA_LOSS
        *retry_after_ms = batch->grpc_retry_ms > 0 ? batch->grpc_retry_ms : 0;
        return DRV_EXPORT_RETRY;
    default:
        return DRV_EXPORT_DROP;
    }
}
