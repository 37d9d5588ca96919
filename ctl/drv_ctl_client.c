/*  drv_ctl_client — request/reply over a DEALER socket, or over HTTP with
    libcurl. */
#include "drv_ctl_client.h"

#include "drover/drv_mpjson.h"
#include "drover/drv_version.h"

#include <curl/curl.h>
#include <string.h>
#include <sys/stat.h>

#define REPLY_MAX (64 << 20) // the largest answer read (a /status of many pipelines)

typedef struct {
    char *data;
    size_t len;
    bool too_big;
} reply_buf_t;

static size_t s_on_body(char *data, size_t size, size_t count, void *arg)
{
    reply_buf_t *buf = arg;
    size_t n = size * count;
    if (buf->len + n > REPLY_MAX) {
        buf->too_big = true;
        return 0;
    }
    char *grown = realloc(buf->data, buf->len + n + 1);
    if (!grown) {
        return 0;
    }
    buf->data = grown;
    memcpy(buf->data + buf->len, data, n);
    buf->len += n;
    buf->data[buf->len] = 0;
    return n;
}

//  The URL of path with query's members as its parameters.
static char *s_url(CURL *easy, const char *endpoint, const char *path, json_t *query)
{
    size_t len = strlen(endpoint);
    while (len > 0 && endpoint[len - 1] == '/') {
        len--;
    }
    size_t cap = len + strlen(path) + 2;
    const char *key;
    json_t *value;
    json_object_foreach(query, key, value)
    {
        cap += 3 * (strlen(key) + strlen(json_string_value(value) ?: "")) + 2;
    }
    char *url = malloc(cap);
    snprintf(url, cap, "%.*s%s", (int)len, endpoint, path);
    char sep = '?';
    json_object_foreach(query, key, value)
    {
        char *k = curl_easy_escape(easy, key, 0);
        char *v = curl_easy_escape(easy, json_string_value(value) ?: "", 0);
        size_t used = strlen(url);
        snprintf(url + used, cap - used, "%c%s=%s", sep, k ? k : "", v ? v : "");
        curl_free(k);
        curl_free(v);
        sep = '&';
    }
    return url;
}

//  An easy handle for path on the HTTP admin, with what every request
//  carries: Accept (accept unless options say), the token, the user agent.
//  NULL out of memory. *headers and *url are the caller's to free after.
static CURL *s_easy(const drv_ctl_options_t *options, const char *path, json_t *query, const char *accept,
                    struct curl_slist **headers, char **url)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *easy = curl_easy_init();
    if (!easy) {
        return NULL;
    }
    *url = s_url(easy, options->endpoint, path, query);
    char line[600];
    snprintf(line, sizeof line, "Accept: %s", options->accept ? options->accept : accept);
    *headers = curl_slist_append(NULL, line);
    if (options->token) {
        snprintf(line, sizeof line, "Authorization: Bearer %s", options->token);
        *headers = curl_slist_append(*headers, line);
    }
    curl_easy_setopt(easy, CURLOPT_URL, *url);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    char agent[64];
    snprintf(agent, sizeof agent, "droverctl/%s", drv_version());
    curl_easy_setopt(easy, CURLOPT_USERAGENT, agent); // copied
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    return easy;
}

//  The same request over the HTTP admin.
static int s_http_request(const drv_ctl_options_t *options, const char *method, const char *path, json_t *query,
                          json_t *body, json_t **reply_body, char *err, size_t errlen)
{
    struct curl_slist *headers = NULL;
    char *url = NULL;
    CURL *easy = s_easy(options, path, query, "application/json", &headers, &url);
    if (!easy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        headers = curl_slist_append(headers, "Content-Type: application/json");
    }
    reply_buf_t reply = {0};
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, text ? text : "");
    }
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)options->timeout_ms);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, s_on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &reply);
    CURLcode rc = curl_easy_perform(easy);
    int status = -1;
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "%s: %s%s", options->endpoint,
                 reply.too_big ? "the answer is larger than 64 MiB" : curl_easy_strerror(rc),
                 rc == CURLE_COULDNT_CONNECT ? " (is droverd running, with engine.admin.http? see -e)" : "");
    } else {
        long code = 0;
        char *type = NULL;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_getinfo(easy, CURLINFO_CONTENT_TYPE, &type);
        status = (int)code;
        if (type && !strncmp(type, "application/json", 16) && reply.len > 0) {
            json_error_t jerr;
            *reply_body = json_loadb(reply.data, reply.len, JSON_DECODE_ANY, &jerr);
            if (!*reply_body) {
                snprintf(err, errlen, "%s: malformed JSON in the answer: %s", options->endpoint, jerr.text);
                status = -1;
            }
        } else {
            *reply_body = json_stringn(reply.data ? reply.data : "", reply.len); // text (metrics), as over zmq
        }
    }
    free(reply.data);
    curl_slist_free_all(headers);
    free(text);
    free(url);
    curl_easy_cleanup(easy);
    return status;
}

bool drv_ctl_is_http(const char *endpoint)
{
    return !strncmp(endpoint, "http://", 7) || !strncmp(endpoint, "https://", 8);
}

typedef struct {
    drv_ctl_line_fn *line;
    void *arg;
    reply_buf_t pending; // a line not ended yet
    bool done;           // line said stop
    volatile int *stop;
} stream_t;

static size_t s_on_stream(char *data, size_t size, size_t count, void *arg)
{
    stream_t *s = arg;
    size_t n = size * count;
    if (s_on_body(data, 1, n, &s->pending) != n) {
        return 0;
    }
    char *start = s->pending.data, *nl;
    while (!s->done && (nl = memchr(start, '\n', s->pending.len - (size_t)(start - s->pending.data)))) {
        s->done = !s->line(s->arg, start, (size_t)(nl - start));
        start = nl + 1;
    }
    size_t left = s->pending.len - (size_t)(start - s->pending.data);
    memmove(s->pending.data, start, left);
    s->pending.len = left;
    return s->done ? 0 : n;
}

static int s_on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    stream_t *s = arg;
    return s->stop && *s->stop ? 1 : 0;
}

int drv_ctl_http_stream(const drv_ctl_options_t *options, const char *path, json_t *query, long for_ms,
                        volatile int *stop, drv_ctl_line_fn *line, void *arg, char *err, size_t errlen)
{
    struct curl_slist *headers = NULL;
    char *url = NULL;
    CURL *easy = s_easy(options, path, query, "text/event-stream", &headers, &url);
    if (!easy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    stream_t s = {.line = line, .arg = arg, .stop = stop};
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, (long)options->timeout_ms);
    if (for_ms > 0) {
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, for_ms);
    }
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, s_on_stream);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, s_on_progress);
    curl_easy_setopt(easy, CURLOPT_XFERINFODATA, &s);
    CURLcode rc = curl_easy_perform(easy);
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    int status = (int)code;
    bool ended_by_us = s.done || rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_ABORTED_BY_CALLBACK;
    if (rc != CURLE_OK && !(ended_by_us && code > 0)) {
        snprintf(err, errlen, "%s: %s", options->endpoint, curl_easy_strerror(rc));
        status = -1;
    }
    free(s.pending.data);
    curl_slist_free_all(headers);
    free(url);
    curl_easy_cleanup(easy);
    return status;
}

//  An ipc:// endpoint whose socket file is not there: said at once rather
//  than after the timeout (zmq would wait for it to appear).
static bool s_ipc_missing(const char *endpoint, char *err, size_t errlen)
{
    struct stat st;
    if (strncmp(endpoint, "ipc://", 6) || stat(endpoint + 6, &st) == 0) {
        return false;
    }
    snprintf(err, errlen, "no admin socket at %s (is droverd running? its engine.run_dir/admin.sock; see -e)",
             endpoint + 6);
    return true;
}

int drv_ctl_secure(zsock_t *sock, const drv_ctl_options_t *options, char *err, size_t errlen)
{
    if (!options->client_key && !options->server_key) {
        return 0;
    }
    if (!options->client_key || !options->server_key) {
        snprintf(err, errlen, "CURVE needs both --key (your secret cert) and --server-key");
        return -1;
    }
    zcert_t *client = zcert_load(options->client_key);
    if (!client) {
        snprintf(err, errlen, "cannot load client certificate %s", options->client_key);
        return -1;
    }
    char server_key[41] = "";
    zcert_t *server = zcert_load(options->server_key);
    if (server) {
        snprintf(server_key, sizeof server_key, "%s", zcert_public_txt(server));
        zcert_destroy(&server);
    } else if (strlen(options->server_key) == 40) {
        snprintf(server_key, sizeof server_key, "%s", options->server_key);
    } else {
        snprintf(err, errlen, "--server-key: %s is neither a certificate file nor a Z85 key", options->server_key);
        zcert_destroy(&client);
        return -1;
    }
    zcert_apply(client, sock);
    zsock_set_curve_serverkey(sock, server_key);
    zcert_destroy(&client);
    return 0;
}

int drv_ctl_request(const drv_ctl_options_t *options, const char *method, const char *path, json_t *query, json_t *body,
                    json_t **reply_body, char *err, size_t errlen)
{
    *reply_body = NULL;
    if (drv_ctl_is_http(options->endpoint)) {
        return s_http_request(options, method, path, query, body, reply_body, err, errlen);
    }
    if (s_ipc_missing(options->endpoint, err, errlen)) {
        return -1;
    }
    zsock_t *sock = zsock_new(ZMQ_DEALER);
    zsock_set_linger(sock, 0);
    int status = -1;
    if (drv_ctl_secure(sock, options, err, errlen) != 0) {
        goto done;
    }
    if (zsock_connect(sock, "%s", options->endpoint) != 0) {
        snprintf(err, errlen, "cannot connect to %s", options->endpoint);
        goto done;
    }
    json_t *request = json_pack("{s:s, s:s}", "method", method, "path", path);
    if (query) {
        json_object_set(request, "query", query);
    }
    if (body) {
        json_object_set(request, "body", body);
    }
    char *data;
    size_t size;
    drv_mpjson_encode(request, &data, &size);
    json_decref(request);
    zmq_send(zsock_resolve(sock), data, size, 0);
    free(data);
    zmq_pollitem_t item = {zsock_resolve(sock), 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, options->timeout_ms) <= 0) {
        snprintf(err, errlen, "no answer from %s within %d ms (is droverd running? see -e)", options->endpoint,
                 options->timeout_ms);
        goto done;
    }
    zframe_t *frame = zframe_recv(sock);
    char why[200];
    json_t *reply = frame ? drv_mpjson_decode(zframe_data(frame), zframe_size(frame), why, sizeof why) : NULL;
    zframe_destroy(&frame);
    if (!reply || !json_is_integer(json_object_get(reply, "status"))) {
        snprintf(err, errlen, "malformed reply from %s", options->endpoint);
        json_decref(reply);
        goto done;
    }
    status = (int)json_integer_value(json_object_get(reply, "status"));
    *reply_body = json_incref(json_object_get(reply, "body"));
    json_decref(reply);
done:
    zsock_destroy(&sock);
    return status;
}
