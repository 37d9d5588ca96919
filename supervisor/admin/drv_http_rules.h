/*  drv_http_rules — who may ask what of the HTTP admin (docs/security.md), as a
    pure function of a request's method, path and headers, decided before
    its body is read. Kept apart from libmicrohttpd so that it is tested on
    its own (tests/unit/test_http_rules.c). */
#ifndef DRV_HTTP_RULES_H
#define DRV_HTTP_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct drv_http_rules_t drv_http_rules_t;

//  Accepted Host values: listen's host, localhost, 127.0.0.1, [::1] and the
//  extra names (engine.admin.http_hosts), each with or without a port; an
//  extra "*" accepts every Host (an engine reached by pod IP, behind a
//  token). An Origin is accepted when it names the Host the request was
//  sent to, or an accepted name.
//  token: the bearer token mutating requests need, or NULL.
drv_http_rules_t *drv_http_rules_new(const char *listen, const char *const *extra_hosts, size_t extra_count,
                                     const char *token);
void drv_http_rules_destroy(drv_http_rules_t **self_p);

typedef struct {
    const char *method;
    const char *path;          // without the query string
    const char *host;          // Host header, or NULL
    const char *origin;        // Origin header, or NULL
    const char *content_type;  // Content-Type header, or NULL
    const char *authorization; // Authorization header, or NULL
    int64_t content_length;    // -1 when not given
    int64_t max_body;          // larger bodies get 413
} drv_http_request_head_t;

typedef struct {
    int status;       // 0: go on and read the body
    const char *kind; // error kind (docs/operations.md, the admin API)
    char message[300];
} drv_http_verdict_t;

//  Judges a request from its head alone, in this order: 421 (Host), 403
//  (Origin of a mutating request), 401 (token), 415 (Content-Type of a
//  mutating request), 413 (declared length). *authorized says whether the
//  token was presented (GETs need none).
void drv_http_rules_check(const drv_http_rules_t *self, const drv_http_request_head_t *head,
                          drv_http_verdict_t *verdict, bool *authorized);

//  True for the routes Kubernetes probes and scrapers reach by pod IP.
bool drv_http_rules_is_probe(const char *path);

#endif
