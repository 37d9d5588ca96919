/*  drv_s3_sign — see drv_s3_sign.h. The steps are AWS's: a canonical
    request, a string to sign naming its hash, a key derived by HMAC from
    the secret through date, region and service, and the signature. */
#include "drv_s3_sign.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERVICE "s3"
#define HEADERS_MAX 16

int drv_s3_uri_encode(const char *text, size_t len, bool keep_slash, drv_buf_t *out)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                     c == '_' || c == '.' || c == '~' || (c == '/' && keep_slash);
        char escaped[3] = {'%', hex[c >> 4], hex[c & 15]};
        if (drv_buf_append(out, plain ? (const char *)&text[i] : escaped, plain ? 1 : 3) != 0) {
            return -1;
        }
    }
    return 0;
}

static void s_hex(const unsigned char *bytes, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[bytes[i] >> 4];
        out[2 * i + 1] = hex[bytes[i] & 15];
    }
    out[2 * n] = 0;
}

void drv_s3_sha256_hex(const void *data, size_t size, char out[DRV_S3_SHA256_HEX])
{
    unsigned char digest[32];
    unsigned int len = 0;
    EVP_Digest(data, size, digest, &len, EVP_sha256(), NULL);
    s_hex(digest, 32, out);
}

void drv_s3_amz_date(time_t when, char out[DRV_S3_AMZ_DATE])
{
    struct tm tm;
    gmtime_r(&when, &tm);
    strftime(out, DRV_S3_AMZ_DATE, "%Y%m%dT%H%M%SZ", &tm);
}

static void s_hmac(const void *key, size_t keylen, const char *text, unsigned char out[32])
{
    unsigned int len = 32;
    HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)text, strlen(text), out, &len);
}

static int s_header_cmp(const void *a, const void *b)
{
    return strcmp(((const drv_s3_header_t *)a)->name, ((const drv_s3_header_t *)b)->name);
}

//  A header's value as the canonical request has it: spaces at either end
//  trimmed, runs of spaces inside one.
static int s_trimmed(const char *value, drv_buf_t *out)
{
    while (*value == ' ' || *value == '\t') {
        value++;
    }
    size_t len = strlen(value);
    while (len && (value[len - 1] == ' ' || value[len - 1] == '\t')) {
        len--;
    }
    for (size_t i = 0; i < len; i++) {
        bool space = value[i] == ' ' || value[i] == '\t';
        if (space && i > 0 && (value[i - 1] == ' ' || value[i - 1] == '\t')) {
            continue;
        }
        if (drv_buf_putc(out, space ? ' ' : value[i]) != 0) {
            return -1;
        }
    }
    return 0;
}

int drv_s3_authorization(const drv_s3_credentials_t *credentials, const char *method, const char *path,
                         const char *query, const drv_s3_header_t *headers, size_t n, const char *payload_hash,
                         const char *amz_date, char *out, size_t outlen)
{
    if (n > HEADERS_MAX) {
        return -1;
    }
    drv_s3_header_t sorted[HEADERS_MAX];
    memcpy(sorted, headers, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, s_header_cmp);
    drv_buf_t canonical = {0}, signed_headers = {0};
    int rc = drv_buf_append(&canonical, method, strlen(method)) | drv_buf_putc(&canonical, '\n') |
             drv_buf_append(&canonical, path, strlen(path)) | drv_buf_putc(&canonical, '\n') |
             drv_buf_append(&canonical, query, strlen(query)) | drv_buf_putc(&canonical, '\n');
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = drv_buf_append(&canonical, sorted[i].name, strlen(sorted[i].name)) | drv_buf_putc(&canonical, ':') |
             s_trimmed(sorted[i].value, &canonical) | drv_buf_putc(&canonical, '\n') |
             (i ? drv_buf_putc(&signed_headers, ';') : 0) |
             drv_buf_append(&signed_headers, sorted[i].name, strlen(sorted[i].name));
    }
    rc |= drv_buf_putc(&canonical, '\n') | drv_buf_append(&canonical, signed_headers.data, signed_headers.len) |
          drv_buf_putc(&canonical, '\n') | drv_buf_append(&canonical, payload_hash, strlen(payload_hash)) |
          drv_buf_putc(&signed_headers, 0);
    if (rc != 0) {
        drv_buf_free(&canonical);
        drv_buf_free(&signed_headers);
        return -1;
    }
    char request_hash[DRV_S3_SHA256_HEX], day[9], scope[200], to_sign[400];
    drv_s3_sha256_hex(canonical.data, canonical.len, request_hash);
    snprintf(day, sizeof day, "%.8s", amz_date);
    snprintf(scope, sizeof scope, "%s/%s/" SERVICE "/aws4_request", day, credentials->region);
    snprintf(to_sign, sizeof to_sign, "AWS4-HMAC-SHA256\n%s\n%s\n%s", amz_date, scope, request_hash);
    //  The signing key: HMAC of the date under "AWS4" + secret, then of the
    //  region, the service and "aws4_request", each under the one before.
    char secret[300];
    unsigned char key[32], signature[32];
    snprintf(secret, sizeof secret, "AWS4%s", credentials->secret_access_key);
    s_hmac(secret, strlen(secret), day, key);
    s_hmac(key, 32, credentials->region, key);
    s_hmac(key, 32, SERVICE, key);
    s_hmac(key, 32, "aws4_request", key);
    s_hmac(key, 32, to_sign, signature);
    char signature_hex[65];
    s_hex(signature, 32, signature_hex);
    int written = snprintf(out, outlen, "AWS4-HMAC-SHA256 Credential=%s/%s,SignedHeaders=%s,Signature=%s",
                           credentials->access_key_id, scope, signed_headers.data, signature_hex);
    drv_buf_free(&canonical);
    drv_buf_free(&signed_headers);
    return written > 0 && (size_t)written < outlen ? 0 : -1;
}
