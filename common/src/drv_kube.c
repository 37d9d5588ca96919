/*  drv_kube — the API server's address and credentials, and one-off
    requests (drover/drv_kube.h). */
#include "drv_kube_internal.h"

#include "drover/drv_secret.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERVICE_ACCOUNT "/var/run/secrets/kubernetes.io/serviceaccount"
#define BODY_MAX (64 << 20)

struct drv_kube_t {
    char *server; // the URL, without a trailing slash
    char *token_file;
    char *ca_file;
};

drv_kube_t *drv_kube_new(const drv_kube_config_t *config, char *err, size_t errlen)
{
    char url[512];
    const char *token = config->token_file, *ca = config->ca_file;
    if (!config->server || !strcmp(config->server, "in_cluster")) {
        //  As client-go's rest.InClusterConfig: the service's address from the environment.
        const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
        if (!host || !*host || !port || !*port) {
            snprintf(err, errlen,
                     "api.server in_cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are "
                     "not set (not running in a pod?)");
            return NULL;
        }
        snprintf(url, sizeof url, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
        token = token ? token : SERVICE_ACCOUNT "/token";
        ca = ca ? ca : SERVICE_ACCOUNT "/ca.crt";
    } else if (strncmp(config->server, "http://", 7) && strncmp(config->server, "https://", 8)) {
        snprintf(err, errlen, "api.server must be in_cluster or an http:// or https:// URL, not \"%s\"",
                 config->server);
        return NULL;
    } else {
        snprintf(url, sizeof url, "%s", config->server);
    }
    size_t len = strlen(url);
    while (len > 0 && url[len - 1] == '/') {
        url[--len] = 0;
    }
    drv_kube_t *self = calloc(1, sizeof *self);
    self->server = strdup(url);
    self->token_file = token ? strdup(token) : NULL;
    self->ca_file = ca ? strdup(ca) : NULL;
    return self;
}

void drv_kube_destroy(drv_kube_t **self_p)
{
    if (self_p && *self_p) {
        drv_kube_t *self = *self_p;
        free(self->server);
        free(self->token_file);
        free(self->ca_file);
        free(self);
        *self_p = NULL;
    }
}

const char *drv_kube_server(const drv_kube_t *self)
{
    return self->server;
}

CURL *drv_kube_easy(drv_kube_t *self, const char *path, struct curl_slist **headers, char *err, size_t errlen)
{
    *headers = curl_slist_append(NULL, "Accept: application/json");
    if (self->token_file) {
        //  Read for every connection: a projected token is rotated on disk.
        size_t len = strlen(self->token_file) + 16;
        char *ref = malloc(len);
        snprintf(ref, len, "${file:%s}", self->token_file);
        char *token = drv_secret_resolve(ref, err, errlen);
        free(ref);
        if (!token) {
            curl_slist_free_all(*headers);
            *headers = NULL;
            return NULL;
        }
        size_t size = strlen(token) + 32;
        char *line = malloc(size);
        snprintf(line, size, "Authorization: Bearer %s", token);
        *headers = curl_slist_append(*headers, line);
        explicit_bzero(line, size);
        explicit_bzero(token, strlen(token));
        free(line);
        free(token);
    }
    CURL *easy = curl_easy_init();
    char *url = malloc(strlen(self->server) + strlen(path) + 1);
    strcpy(url, self->server);
    strcat(url, path);
    curl_easy_setopt(easy, CURLOPT_URL, url);
    free(url);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, *headers);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
    if (self->ca_file) {
        curl_easy_setopt(easy, CURLOPT_CAINFO, self->ca_file);
    }
    return easy;
}

typedef struct {
    char *data;
    size_t size;
    bool over;
} body_t;

static size_t s_on_body(char *data, size_t size, size_t count, void *arg)
{
    body_t *body = arg;
    size_t n = size * count;
    if (body->size + n > BODY_MAX) {
        body->over = true;
        return 0;
    }
    char *grown = realloc(body->data, body->size + n + 1);
    if (!grown) {
        return 0;
    }
    body->data = grown;
    memcpy(body->data + body->size, data, n);
    body->size += n;
    body->data[body->size] = 0;
    return n;
}

int drv_kube_get(drv_kube_t *self, const char *path, json_t **out, char *err, size_t errlen)
{
    return drv_kube_request(self, "GET", path, NULL, NULL, out, err, errlen);
}

int drv_kube_request(drv_kube_t *self, const char *method, const char *path, const char *content_type,
                     const json_t *sent, json_t **out, char *err, size_t errlen)
{
    *out = NULL;
    struct curl_slist *headers = NULL;
    CURL *easy = drv_kube_easy(self, path, &headers, err, errlen);
    if (!easy) {
        return 0;
    }
    char *text = sent ? json_dumps(sent, JSON_COMPACT) : NULL;
    if (strcmp(method, "GET")) {
        curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method);
    }
    if (text) {
        char line[200];
        snprintf(line, sizeof line, "Content-Type: %s", content_type ? content_type : "application/json");
        headers = curl_slist_append(headers, line);
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, text);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
    }
    body_t body = {0};
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, s_on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 60000L);
    CURLcode rc = curl_easy_perform(easy);
    long status = 0;
    if (rc == CURLE_OK) {
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        json_error_t error;
        *out = body.data ? json_loadb(body.data, body.size, 0, &error) : NULL;
        if (!*out) {
            snprintf(err, errlen, "%s %s: HTTP %ld, the answer is not JSON", method, path, status);
        }
    } else {
        snprintf(err, errlen, "%s %s%s: %s", method, self->server, path,
                 body.over ? "the answer is over 64 MiB" : curl_easy_strerror(rc));
    }
    free(text);
    free(body.data);
    curl_easy_cleanup(easy);
    curl_slist_free_all(headers);
    return (int)status;
}
