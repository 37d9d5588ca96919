/*  drv_http_rules — Host, Origin, token and Content-Type rules of the HTTP
    admin. They stop what a web page in the operator's browser could do:
    a cross-site form post (Content-Type other than JSON: 415; foreign
    Origin: 403) and DNS rebinding (a foreign Host: 421). */
#include "drv_http_rules.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_HOSTS 40

struct drv_http_rules_t {
    char *hosts[MAX_HOSTS]; // accepted host names, lower case, without port ("[::1]" keeps brackets)
    size_t count;
    bool any_host; // http_hosts has "*": every Host is accepted (reached by pod IP, with a token)
    char *token;   // bearer token, or NULL
};

static void s_add(drv_http_rules_t *self, const char *host, size_t len)
{
    if (self->count == MAX_HOSTS || len == 0) {
        return;
    }
    char *copy = strndup(host, len);
    for (char *p = copy; *p; p++) {
        *p = (char)tolower((unsigned char)*p);
    }
    self->hosts[self->count++] = copy;
}

//  Length of the host part of "host", "host:port", "[v6]" or "[v6]:port";
//  0 when what follows the host is not ":digits".
static size_t s_host_len(const char *value)
{
    size_t len;
    if (value[0] == '[') {
        const char *close = strchr(value, ']');
        if (!close) {
            return 0;
        }
        len = (size_t)(close - value) + 1;
    } else {
        const char *colon = strchr(value, ':');
        len = colon ? (size_t)(colon - value) : strlen(value);
    }
    const char *rest = value + len;
    if (*rest == ':') {
        rest++;
        if (!*rest) {
            return 0;
        }
        for (; *rest; rest++) {
            if (!isdigit((unsigned char)*rest)) {
                return 0;
            }
        }
    } else if (*rest) {
        return 0;
    }
    return len;
}

drv_http_rules_t *drv_http_rules_new(const char *listen, const char *const *extra_hosts, size_t extra_count,
                                     const char *token)
{
    drv_http_rules_t *self = calloc(1, sizeof *self);
    s_add(self, "localhost", 9);
    s_add(self, "127.0.0.1", 9);
    s_add(self, "[::1]", 5);
    if (listen) {
        s_add(self, listen, s_host_len(listen));
    }
    for (size_t i = 0; i < extra_count; i++) {
        if (strcmp(extra_hosts[i], "*") == 0) {
            self->any_host = true;
        } else {
            s_add(self, extra_hosts[i], s_host_len(extra_hosts[i]));
        }
    }
    self->token = token ? strdup(token) : NULL;
    return self;
}

void drv_http_rules_destroy(drv_http_rules_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_http_rules_t *self = *self_p;
    for (size_t i = 0; i < self->count; i++) {
        free(self->hosts[i]);
    }
    free(self->token);
    free(self);
    *self_p = NULL;
}

//  True when "host[:port]" names one of the accepted hosts (any port).
static bool s_listed(const drv_http_rules_t *self, const char *value)
{
    size_t len = s_host_len(value);
    for (size_t i = 0; len && i < self->count; i++) {
        if (strlen(self->hosts[i]) == len && strncasecmp(self->hosts[i], value, len) == 0) {
            return true;
        }
    }
    return false;
}

static bool s_host_ok(const drv_http_rules_t *self, const char *value)
{
    return value && (self->any_host || s_listed(self, value));
}

//  An Origin is "scheme://host[:port]"; "null" and anything else is foreign.
//  It is ours when it is the very host the request was sent to (the page
//  came from this engine), or one of the accepted names.
static bool s_origin_ok(const drv_http_rules_t *self, const char *origin, const char *host)
{
    const char *sep = strstr(origin, "://");
    if (!sep || (strncasecmp(origin, "http", 4) != 0)) {
        return false;
    }
    const char *origin_host = sep + 3;
    return (host && strcasecmp(origin_host, host) == 0) || s_listed(self, origin_host);
}

//  Constant-time comparison of the presented token with ours.
static bool s_token_ok(const char *header, const char *token)
{
    if (!token) {
        return true;
    }
    if (!header || strncmp(header, "Bearer ", 7) != 0) {
        return false;
    }
    const char *given = header + 7;
    size_t a = strlen(given), b = strlen(token);
    unsigned char diff = (unsigned char)(a != b);
    for (size_t i = 0; i < b; i++) {
        diff |= (unsigned char)(token[i] ^ (i < a ? given[i] : 0));
    }
    return diff == 0;
}

//  "application/json", optionally followed by parameters (; charset=utf-8).
static bool s_json_type(const char *value)
{
    if (!value) {
        return false;
    }
    while (*value == ' ') {
        value++;
    }
    size_t n = strlen("application/json");
    if (strncasecmp(value, "application/json", n) != 0) {
        return false;
    }
    const char *rest = value + n;
    while (*rest == ' ') {
        rest++;
    }
    return *rest == 0 || *rest == ';';
}

bool drv_http_rules_is_probe(const char *path)
{
    return !strcmp(path, "/livez") || !strcmp(path, "/readyz") || !strcmp(path, "/metrics");
}

static void s_refuse(drv_http_verdict_t *verdict, int status, const char *kind, const char *fmt, const char *arg)
{
    verdict->status = status;
    verdict->kind = kind;
    snprintf(verdict->message, sizeof verdict->message, fmt, arg ? arg : "");
}

void drv_http_rules_check(const drv_http_rules_t *self, const drv_http_request_head_t *head,
                          drv_http_verdict_t *verdict, bool *authorized)
{
    memset(verdict, 0, sizeof *verdict);
    *authorized = s_token_ok(head->authorization, self->token);
    bool mutating = strcmp(head->method, "GET") && strcmp(head->method, "HEAD") && strcmp(head->method, "OPTIONS");
    if (!drv_http_rules_is_probe(head->path) && !s_host_ok(self, head->host)) {
        s_refuse(verdict, 421, "misdirected_request",
                 "Host \"%.200s\" is not one this engine answers to (engine.admin.http_hosts)", head->host);
    } else if (mutating && head->origin && !s_origin_ok(self, head->origin, head->host)) {
        s_refuse(verdict, 403, "forbidden", "Origin \"%.200s\" may not change this engine", head->origin);
    } else if (mutating && !*authorized) {
        s_refuse(verdict, 401, "unauthorized",
                 "%s needs \"Authorization: Bearer <token>\" with the engine's http token", head->method);
    } else if (mutating && !s_json_type(head->content_type)) {
        verdict->status = 415;
        verdict->kind = "unsupported_media_type";
        snprintf(verdict->message, sizeof verdict->message, "%s needs \"Content-Type: application/json\"%s%.150s%s",
                 head->method, head->content_type ? ", not \"" : "", head->content_type ? head->content_type : "",
                 head->content_type ? "\"" : "");
    } else if (head->content_length > head->max_body) {
        verdict->status = 413;
        verdict->kind = "payload_too_large";
        snprintf(verdict->message, sizeof verdict->message, "request body of %lld bytes is larger than %lld",
                 (long long)head->content_length, (long long)head->max_body);
    }
}
