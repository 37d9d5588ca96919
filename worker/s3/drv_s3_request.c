/*  drv_s3_request — see drv_s3_request.h. */
#include "drv_s3_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int drv_s3_target_endpoint(drv_s3_target_t *target, const char *endpoint, const char *region, char *err, size_t errlen)
{
    char fallback[300];
    if (!endpoint || !endpoint[0]) {
        snprintf(fallback, sizeof fallback, "https://s3.%s.amazonaws.com", region);
        endpoint = fallback;
    }
    const char *rest = strstr(endpoint, "://");
    if (!rest || (strncmp(endpoint, "http://", 7) && strncmp(endpoint, "https://", 8))) {
        snprintf(err, errlen, "endpoint %s: must be an http:// or https:// URL", endpoint);
        return -1;
    }
    rest += 3;
    size_t host_len = strcspn(rest, "/?#");
    if (host_len == 0 || rest[host_len] == '?' || rest[host_len] == '#') {
        snprintf(err, errlen, "endpoint %s: a URL with a host and no query", endpoint);
        return -1;
    }
    target->scheme = strndup(endpoint, (size_t)(strstr(endpoint, "://") - endpoint));
    target->host = strndup(rest, host_len);
    target->base = strdup(rest + host_len);
    size_t base_len = strlen(target->base);
    while (base_len && target->base[base_len - 1] == '/') {
        target->base[--base_len] = 0; // "http://h:9000/" is "http://h:9000"
    }
    return target->scheme && target->host && target->base ? 0 : -1;
}

void drv_s3_target_fini(drv_s3_target_t *target)
{
    free(target->scheme);
    free(target->host);
    free(target->base);
    free(target->bucket);
    free((char *)target->credentials.access_key_id);
    free((char *)target->credentials.secret_access_key);
    free((char *)target->credentials.session_token);
    free((char *)target->credentials.region);
    free(target->ca_file);
    memset(target, 0, sizeof *target);
}

static size_t s_body(char *data, size_t size, size_t n, void *arg)
{
    drv_s3_answer_t *answer = arg;
    size_t room = sizeof answer->body - 1 - answer->len, take = size * n < room ? size * n : room;
    memcpy(answer->body + answer->len, data, take);
    answer->len += take;
    answer->body[answer->len] = 0;
    return size * n; // the rest is read and let go
}

static size_t s_header(char *data, size_t size, size_t n, void *arg)
{
    drv_s3_answer_t *answer = arg;
    size_t len = size * n;
    if (len > 5 && !strncasecmp(data, "ETag:", 5)) {
        const char *v = data + 5;
        while (*v == ' ' && v < data + len) {
            v++;
        }
        size_t vlen = (size_t)(data + len - v);
        while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' ')) {
            vlen--;
        }
        snprintf(answer->etag, sizeof answer->etag, "%.*s", (int)vlen, v);
    }
    return len;
}

CURL *drv_s3_request(const drv_s3_target_t *target, const char *method, const char *key, const char *query,
                     const void *body, size_t size, drv_s3_answer_t *answer, struct curl_slist **headers)
{
    *headers = NULL;
    memset(answer, 0, sizeof *answer);
    drv_buf_t path = {0}, url = {0};
    const char *host = target->host;
    char vhost[600];
    if (!target->path_style) {
        snprintf(vhost, sizeof vhost, "%s.%s", target->bucket, target->host);
        host = vhost;
    }
    //  The path as sent and as signed: URI-encoded once, slashes kept.
    int rc = drv_buf_append(&path, target->base, strlen(target->base));
    if (target->path_style) {
        rc |= drv_buf_putc(&path, '/') | drv_s3_uri_encode(target->bucket, strlen(target->bucket), false, &path);
    }
    rc |= drv_buf_putc(&path, '/');
    if (key) {
        rc |= drv_s3_uri_encode(key, strlen(key), true, &path);
    }
    rc |= drv_buf_putc(&path, 0);
    rc |= drv_buf_append(&url, target->scheme, strlen(target->scheme)) | drv_buf_append(&url, "://", 3) |
          drv_buf_append(&url, host, strlen(host)) | drv_buf_append(&url, path.data, path.len - 1) |
          (query[0] ? drv_buf_putc(&url, '?') | drv_buf_append(&url, query, strlen(query)) : 0) | drv_buf_putc(&url, 0);
    CURL *easy = rc == 0 ? curl_easy_init() : NULL;
    if (!easy) {
        drv_buf_free(&path);
        drv_buf_free(&url);
        return NULL;
    }
    char hash[DRV_S3_SHA256_HEX], date[DRV_S3_AMZ_DATE], auth[600];
    drv_s3_sha256_hex(body ? body : "", size, hash);
    drv_s3_amz_date(time(NULL), date);
    drv_s3_header_t signed_headers[4] = {
        {"host", host}, {"x-amz-content-sha256", hash}, {"x-amz-date", date}, {"x-amz-security-token", NULL}};
    size_t n = 3;
    if (target->credentials.session_token) {
        signed_headers[n++].value = target->credentials.session_token;
    }
    if (drv_s3_authorization(&target->credentials, method, path.data, query, signed_headers, n, hash, date, auth,
                             sizeof auth) != 0) {
        curl_easy_cleanup(easy);
        drv_buf_free(&path);
        drv_buf_free(&url);
        return NULL;
    }
    char line[800];
    for (size_t i = 0; i < n; i++) {
        snprintf(line, sizeof line, "%s: %s", signed_headers[i].name, signed_headers[i].value);
        *headers = curl_slist_append(*headers, line);
    }
    snprintf(line, sizeof line, "Authorization: %s", auth);
    *headers = curl_slist_append(*headers, line);
    *headers = curl_slist_append(*headers, "Expect:"); // no 100-continue round trip
    *headers = curl_slist_append(*headers, "Content-Type:");
    curl_easy_setopt(easy, CURLOPT_URL, url.data);
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method);
    if (body || !strcmp(method, "POST") || !strcmp(method, "PUT")) {
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)size);
    } else {
        curl_easy_setopt(easy, CURLOPT_NOBODY, !strcmp(method, "HEAD") ? 1L : 0L);
    }
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, *headers);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, s_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, answer);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, s_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, answer);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, target->timeout_ms);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    if (target->ca_file) {
        curl_easy_setopt(easy, CURLOPT_CAINFO, target->ca_file);
    }
    if (target->insecure) {
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    drv_buf_free(&path);
    drv_buf_free(&url); // curl copied the URL
    return easy;
}

bool drv_s3_xml_text(const drv_s3_answer_t *answer, const char *tag, char *out, size_t outlen)
{
    char open[64], close[64];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    const char *start = strstr(answer->body, open);
    const char *end = start ? strstr(start, close) : NULL;
    if (!end) {
        return false;
    }
    start += strlen(open);
    snprintf(out, outlen, "%.*s", (int)(end - start), start);
    return true;
}
