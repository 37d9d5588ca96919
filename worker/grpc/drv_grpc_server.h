/*  drv_grpc_server — a gRPC server inside one instance, for receiver:otlp's
    grpc_endpoint: HTTP/2 (libnghttp2) over h2c or TLS with ALPN h2
    (OpenSSL), unary calls only, driven by the worker's loop through one
    epoll descriptor like drv_http_server. It serves the listening socket
    droverd bound and every instance shares: each instance accepts on its
    own core.

    A call's message (at most max_message_bytes, gunzipped when the call's
    grpc-encoding is gzip) goes to the handler, which answers it with a
    status and, when OK, a response message. What the server refuses
    itself: a method other than POST (HTTP 405), a content-type that is not
    application/grpc (HTTP 415), a header block past 16 KiB (HTTP 431), a
    path it was not given (UNIMPLEMENTED), a message over the limit or past
    the buffer budget of all its connections (RESOURCE_EXHAUSTED, with
    RetryInfo for the budget), a body that is not one gRPC message
    (INVALID_ARGUMENT), and every call while the instance takes nothing
    more (RESOURCE_EXHAUSTED with RetryInfo, before the message is read).
    HTTP/1.1 on the port is answered 505 and closed.

    A drain stops accepting, sends each connection a GOAWAY notice and,
    one round trip (a PING) later, the GOAWAY that names the last stream
    it will serve: the client sends nothing new here and reconnects to
    the instances that stay. The calls in flight are answered; a
    connection closes when its last one is, and the drain is over when no
    connection is left. */
#ifndef DRV_GRPC_SERVER_H
#define DRV_GRPC_SERVER_H

#include "drover/drv_conn_policy.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct drv_grpc_server_t drv_grpc_server_t;

typedef struct {
    int path;            // index into the config's paths
    const void *message; // decoded
    size_t size;
    const char *peer; // the client's IP address ("" when not known)
} drv_grpc_request_t;

typedef struct {
    int status;        // a DRV_GRPC_ code
    char message[400]; // grpc-message: why, for a status other than OK
    void *body;        // OK: the response message, malloc'd; the server frees it
    size_t size;
    int64_t retry_ms; // > 0: a RetryInfo with this delay
} drv_grpc_reply_t;

typedef void(drv_grpc_handler_fn)(void *arg, const drv_grpc_request_t *request, drv_grpc_reply_t *reply);

typedef struct {
    const char *const *paths;      // NULL-terminated: the methods served (/package.Service/Method)
    size_t max_message_bytes;      // one message, decoded
    size_t buffer_bytes;           // messages buffered at once, all connections
    drv_conn_limits_t connections; // per address, total; request_ms: a call's time to send its message whole
    const char *cert_file;         // both, or neither (h2c)
    const char *key_file;
    drv_grpc_handler_fn *handler;
    //  As drv_http_config_t's: answers held until input(arg) is settled,
    //  failed (UNAVAILABLE) when gave_up says an exporter gave some of its
    //  records up, and why the instance takes nothing now (NULL: it takes).
    bool ack;
    int64_t (*input)(void *arg);
    bool (*gave_up)(void *arg, int64_t input);
    const char *(*backlogged)(void *arg);
    void (*answered)(void *arg, double secs); // NULL, or told each call's time from its head to its answer
    void *arg;
} drv_grpc_config_t;

//  Serves listen_fd (inherited; the server closes its copy when it drains
//  or is destroyed). NULL with the reason in err.
drv_grpc_server_t *drv_grpc_server_new(int listen_fd, const drv_grpc_config_t *config, char *err, size_t errlen);
void drv_grpc_server_destroy(drv_grpc_server_t **self_p);

//  The descriptor to poll for reading; -1 once drained with no connection left.
int drv_grpc_server_fd(drv_grpc_server_t *self);
//  Milliseconds until the server has something to do without input, or -1.
int64_t drv_grpc_server_timeout_ms(drv_grpc_server_t *self);
//  Does what is ready: accepts, reads, answers (the handler runs here).
void drv_grpc_server_run(drv_grpc_server_t *self);
//  Every input up to upto is settled: the answers held for them go out.
void drv_grpc_server_settled(drv_grpc_server_t *self, int64_t upto);
//  Stops accepting; see above.
void drv_grpc_server_drain(drv_grpc_server_t *self);

#endif
