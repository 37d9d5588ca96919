/*  drv_http_server — an HTTP receiver's server inside one instance: the
    receivers' rules on the loop-driven server droverd's admin uses too
    (common/drv_httpd, polled by the worker's loop through one epoll
    descriptor). It serves the listening socket droverd bound and every
    instance shares: each instance accepts on its own core.

    The server reads a request's body (at most max_body_bytes, gunzipped
    when Content-Encoding says gzip, or snappy when the config takes it)
    and hands the whole request to the
    handler, which answers it. What it refuses itself, before reading the
    body: a method other than POST (405), a path it was not given (404), a
    media type it was not given (415), a body over the limit (413), and
    bodies past the buffer budget of all its connections together (429
    with Retry-After).

    A drain stops accepting (the other instances accept from then on),
    answers the requests in flight with "Connection: close", gives idle
    keep-alive connections a second to send one more request, and is over
    when no connection is left. */
#ifndef DRV_HTTP_SERVER_H
#define DRV_HTTP_SERVER_H

#include "drover/drv_conn_policy.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct drv_http_server_t drv_http_server_t;

typedef struct {
    const char *path;       // without the query
    const char *media_type; // Content-Type without parameters, lowercase; one of the config's
    const char *body;       // decoded, NUL-terminated past size
    size_t size;
    const char *peer; // the client's IP address ("" when not known)
} drv_http_request_t;

typedef struct {
    int status;
    const char *content_type; // NULL: application/json
    char *body;               // malloc'd; the server frees it
    size_t size;
    int retry_after_secs; // > 0: a Retry-After header
} drv_http_reply_t;

typedef void(drv_http_handler_fn)(void *arg, const drv_http_request_t *request, drv_http_reply_t *reply);
//  Makes the body of a refusal (status, kind, message) for a request of
//  media_type ("" when it had none). NULL: drv_http_reply_error's JSON.
typedef void(drv_http_error_fn)(const char *media_type, int status, const char *kind, const char *message,
                                drv_http_reply_t *reply);

typedef struct {
    const char *const *paths;       // NULL-terminated: the paths served
    const char *const *media_types; // NULL-terminated: Content-Types taken
    size_t max_body_bytes;          // one request's body, decoded
    size_t buffer_bytes;            // bodies buffered at once, all connections
    drv_conn_limits_t connections;  // per address, total, request and idle deadlines (body_budget: buffer_bytes)
    drv_http_handler_fn *handler;
    drv_http_error_fn *error; // NULL: the {"error": {kind, message}} body
    //  ack: true — a 2xx answer is held back until the input the request
    //  became (input(arg) once the handler returned) is settled
    //  (drv_http_server_settled): its records are exported; or 502 when
    //  gave_up (NULL: never) says an exporter gave some of them up.
    bool ack;
    bool snappy; // Content-Encoding: snappy taken too (remote write), bounded by max_body_bytes
    //  How the server pushes back (with Retry-After): 0 is 429; remote
    //  write's 503, which Prometheus retries (it gives a batch up on 429
    //  unless told retry_on_http_429).
    int pushback_status;
    int64_t (*input)(void *arg);
    bool (*gave_up)(void *arg, int64_t input);
    //  NULL, or why while the instance takes nothing more (NULL when it
    //  takes): a request is then refused with 429 and Retry-After before
    //  its body is read.
    const char *(*backlogged)(void *arg);
    //  NULL, or told each request's time from its head to its answer.
    void (*answered)(void *arg, double secs);
    //  NULL, or told of each request refused for what it is (400, 413,
    //  415: a body too large, not of the type or encoding it says): the
    //  sender's fault, counted. Pushing back (429, 503) and a path or
    //  method not served (404, 405) are not.
    void (*refused)(void *arg);
    void *arg;
    //  Both, or neither: HTTPS with these PEM files (read when the server starts).
    const char *cert_file;
    const char *key_file;
} drv_http_config_t;

//  Serves listen_fd (inherited; the server closes its copy when it drains
//  or is destroyed). NULL with the reason in err.
drv_http_server_t *drv_http_server_new(int listen_fd, const drv_http_config_t *config, char *err, size_t errlen);
void drv_http_server_destroy(drv_http_server_t **self_p);

//  The descriptor to poll for reading; -1 once drained with no connection left.
int drv_http_server_fd(drv_http_server_t *self);
//  Milliseconds until the server has something to do without input (a
//  timeout), or -1.
int64_t drv_http_server_timeout_ms(drv_http_server_t *self);
//  Does what is ready: accepts, reads, answers (the handler runs here).
void drv_http_server_run(drv_http_server_t *self);
//  Every input up to upto is settled: the answers held for them go out.
void drv_http_server_settled(drv_http_server_t *self, int64_t upto);
//  Stops accepting; see above.
void drv_http_server_drain(drv_http_server_t *self);

//  Formats the {"error": {kind, message}} body of a refusal into reply.
void drv_http_reply_error(drv_http_reply_t *reply, int status, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
