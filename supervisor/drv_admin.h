/*  drv_admin — the admin API, once, for both transports (contract section 4).
    A transport turns what it received into a drv_admin_request_t and gives it
    to drv_admin_dispatch; the router answers through request->reply exactly
    once — now, or later for requests that wait (rollouts), without ever
    blocking the loop. */
#ifndef DRV_ADMIN_H
#define DRV_ADMIN_H

#include "drv_engine.h"

#include <jansson.h>
#include <stdbool.h>

#define DRV_ADMIN_MAX_BODY (1024 * 1024) // larger bodies get 413
#define DRV_ADMIN_HTTP_IDLE_SECS 10      // an idle or half-sent HTTP connection is closed after this

typedef struct drv_admin_request_t drv_admin_request_t;

typedef struct {
    int status;              // HTTP status code, also used over zmq
    json_t *json;            // JSON body (owned), or NULL when text is set
    char *text;              // plain-text body (owned): /livez, /metrics
    const char *content_type;
    char *location;          // Location header (202), owned
    const char *allow;       // Allow header (405)
    int retry_after_secs;    // Retry-After header (503), 0: none
} drv_admin_response_t;

typedef void(drv_admin_reply_fn)(drv_admin_request_t *request, drv_admin_response_t *response);

struct drv_admin_request_t {
    char method[8];          // GET PUT POST DELETE ...
    char *path;              // without the query string
    json_t *query;           // {name: string}
    json_t *body;            // parsed body or NULL
    bool authorized;         // may mutate (token checked, or a trusted transport)
    const char *transport;   // "http" | "zmq"
    drv_admin_reply_fn *reply; // called exactly once; frees transport state
    void *transport_ctx;
};

//  A zmq request frame, msgpack {method, path, query?, body?}, checked and
//  turned into a request (transport, authorized and reply left for the
//  caller), or NULL with the reason in why (drv_admin_envelope.c).
drv_admin_request_t *drv_admin_envelope_decode(const void *data, size_t size, char *why, size_t whylen);
//  Frees a request's path, query, body and the request itself.
void drv_admin_request_free(drv_admin_request_t *request);

//  The pipeline a route names, or NULL with a 404 (group_not_found or
//  pipeline_not_found) already in response.
drv_pipeline_t *drv_admin_lookup_pipeline(drv_engine_t *engine, const char *group, const char *name,
                                          drv_admin_response_t *response);

//  Percent-decodes text in place and returns its new length. %00 becomes
//  the byte 0xFF (never valid UTF-8), so that a NUL smuggled into a name is
//  refused by the router with 400 instead of cutting the name short.
size_t drv_admin_percent_decode(char *text);

//  Routes the request. Always ends in exactly one request->reply call.
void drv_admin_dispatch(drv_engine_t *engine, drv_admin_request_t *request);

//  Helpers for transports: an error response in the contract's shape.
void drv_admin_error(drv_admin_response_t *response, int status, const char *kind, const char *fmt,
                     ...) __attribute__((format(printf, 4, 5)));
void drv_admin_response_clear(drv_admin_response_t *response);

//  ---- transports
int drv_admin_zmq_start(drv_engine_t *engine, char *err, size_t errlen);
void drv_admin_zmq_on_readable(drv_engine_t *engine);
void drv_admin_zmq_stop(drv_engine_t *engine);

int drv_admin_http_start(drv_engine_t *engine, char *err, size_t errlen);
//  The socket on which MHD's thread hands requests to the loop (NULL: no HTTP).
zsock_t *drv_admin_http_socket(drv_engine_t *engine);
void drv_admin_http_on_readable(drv_engine_t *engine);
void drv_admin_http_stop(drv_engine_t *engine);

#endif
