/*  drv_s3_request — one S3 request as a libcurl handle, signed
    (drv_s3_sign.c) and addressed path-style (ENDPOINT/BUCKET/KEY) or
    virtual-host style (BUCKET.HOST/KEY), and what S3 answered: its status,
    its error's Code and Message, an ETag, an UploadId. exporter:s3 drives
    these on its instance's loop (docs/s3.md). */
#ifndef DRV_S3_REQUEST_H
#define DRV_S3_REQUEST_H

#include "drv_s3_sign.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

#define DRV_S3_ANSWER_MAX 16384 // what is kept of an answer's body

typedef struct {
    char *scheme; // "https" or "http"
    char *host;   // "s3.us-east-1.amazonaws.com", "127.0.0.1:9000" (a port as the endpoint says it)
    char *base;   // a path the endpoint has ("" or "/prefix")
    char *bucket;
    bool path_style;
    drv_s3_credentials_t credentials; // strings owned here
    char *ca_file;                    // tls.ca_file, or NULL
    bool insecure;                    // tls.insecure_skip_verify
    long timeout_ms;
} drv_s3_target_t;

//  What came back: filled by the handle's callbacks.
typedef struct {
    char body[DRV_S3_ANSWER_MAX];
    size_t len;
    char etag[128];
} drv_s3_answer_t;

//  endpoint (NULL: https://s3.REGION.amazonaws.com) into target's scheme,
//  host and base: 0, or -1 with the reason in err.
int drv_s3_target_endpoint(drv_s3_target_t *target, const char *endpoint, const char *region, char *err, size_t errlen);
void drv_s3_target_fini(drv_s3_target_t *target);

//  A handle for method on key (NULL: the bucket) with the canonical query
//  (names sorted, values URI-encoded; "" for none) and body (size bytes,
//  kept alive by the caller until the handle is done), answering into
//  answer; *headers is the caller's to free with the handle. NULL when
//  memory ran out.
CURL *drv_s3_request(const drv_s3_target_t *target, const char *method, const char *key, const char *query,
                     const void *body, size_t size, drv_s3_answer_t *answer, struct curl_slist **headers);

//  The text of the first <tag> in an answer's XML (entities left as they
//  are), into out: true when there is one.
bool drv_s3_xml_text(const drv_s3_answer_t *answer, const char *tag, char *out, size_t outlen);

#endif
