/*  drv_s3_sign — AWS Signature Version 4 for S3 requests (docs/s3.md,
    "Signing"), with OpenSSL's SHA-256 and HMAC. Written here rather than
    left to libcurl: Debian 12's libcurl 7.88 (CURLOPT_AWS_SIGV4) signs the
    path as it is rather than URI-encoded (a key holding `=`, as
    `year=2026` does, gets SignatureDoesNotMatch from S3), neither sorts
    the query nor writes `uploads=`, and sends no x-amz-content-sha256.
    Every request drover signs carries the payload's hash. */
#ifndef DRV_S3_SIGN_H
#define DRV_S3_SIGN_H

#include "drv_buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

typedef struct {
    const char *access_key_id;
    const char *secret_access_key;
    const char *session_token; // NULL: none (else sent as x-amz-security-token, signed)
    const char *region;        // "us-east-1"
} drv_s3_credentials_t;

//  A header to sign: its name in lower case, its value as sent.
typedef struct {
    const char *name;
    const char *value;
} drv_s3_header_t;

#define DRV_S3_SHA256_HEX 65 // 64 hex digits and the NUL
#define DRV_S3_AMZ_DATE 17   // YYYYMMDDTHHMMSSZ and the NUL

//  text URI-encoded as SigV4 wants it, appended to out: every byte but
//  A-Z a-z 0-9 - _ . ~ as %XX (upper case), and / too unless keep_slash.
//  0, or -1 when memory ran out.
int drv_s3_uri_encode(const char *text, size_t len, bool keep_slash, drv_buf_t *out);
//  The SHA-256 of data as 64 lower-case hex digits.
void drv_s3_sha256_hex(const void *data, size_t size, char out[DRV_S3_SHA256_HEX]);
//  when as x-amz-date says it (UTC).
void drv_s3_amz_date(time_t when, char out[DRV_S3_AMZ_DATE]);
//  The Authorization header's value for a request: method, the path
//  URI-encoded (drv_s3_uri_encode, slashes kept), the query canonical
//  (names and values URI-encoded, sorted, `name=value` joined by `&`, a
//  name without a value `name=`), the n headers signed (their names lower
//  case; sorted here, host among them), the payload's SHA-256 hex, and
//  amz_date. 0, or -1 when it does not fit in out.
int drv_s3_authorization(const drv_s3_credentials_t *credentials, const char *method, const char *path,
                         const char *query, const drv_s3_header_t *headers, size_t n, const char *payload_hash,
                         const char *amz_date, char *out, size_t outlen);

#endif
