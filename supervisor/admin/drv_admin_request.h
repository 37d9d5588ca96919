/*  drv_admin_request — an admin request and its response as every layer
    sees them: transports make requests, the router answers them, and
    operations keep them waiting (wait=true) until they end. Errors have the
    shape docs/operations.md gives: {error: {kind, message}}. */
#ifndef DRV_ADMIN_REQUEST_H
#define DRV_ADMIN_REQUEST_H

#include "drv_stream.h"

#include <jansson.h>
#include <stdbool.h>

typedef struct drv_admin_request_t drv_admin_request_t;

typedef struct {
    int status;   // HTTP status code, also used over zmq
    json_t *json; // JSON body (owned), or NULL when text is set
    char *text;   // plain-text body (owned): /livez, /metrics
    const char *content_type;
    char *location;       // Location header (202), owned
    const char *allow;    // Allow header (405)
    int retry_after_secs; // Retry-After header (503), 0: none
    drv_stream_t *stream; // a body that goes on (SSE, a tap): one reference, owned; HTTP only
} drv_admin_response_t;

typedef void(drv_admin_reply_fn)(drv_admin_request_t *request, drv_admin_response_t *response);

struct drv_admin_request_t {
    char method[8];            // GET PUT POST DELETE ...
    char *path;                // without the query string
    json_t *query;             // {name: string}
    json_t *body;              // parsed body or NULL
    bool authorized;           // may mutate (token checked, or a trusted transport)
    const char *transport;     // "http" | "zmq"
    char accept[80];           // HTTP Accept header ("" over zmq)
    int64_t last_event_id;     // HTTP Last-Event-ID header (an EventSource reconnecting), -1: none
    drv_admin_reply_fn *reply; // called exactly once; frees transport state
    void *transport_ctx;
};

//  Frees a request's path, query, body and the request itself.
void drv_admin_request_free(drv_admin_request_t *request);

//  An error response in the shape docs/operations.md gives (the message is made valid
//  UTF-8: it may quote what a client sent).
void drv_admin_error(drv_admin_response_t *response, int status, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void drv_admin_response_clear(drv_admin_response_t *response);

#endif
