/*  drv_httpd — libmicrohttpd driven by its owner's loop: the one HTTP server
    of droverd's admin API and of every HTTP receiver of an instance.

    There is no thread: MHD runs in "external polling" mode behind one epoll
    descriptor. The owner polls drv_httpd_fd for reading, sleeps at most
    drv_httpd_timeout_ms, and calls drv_httpd_run, which does what is ready
    (accepts, reads, writes) and calls the owner back on the same thread.

    A request goes through two callbacks:
    - on_head: the head has arrived. The owner may answer at once (a
      refusal): the body is then never read.
    - on_body: the whole body has arrived (drv_httpd_body; it may have been
      given up on, see drv_http_upload_t). The owner answers now, or later:
      a request left unanswered is suspended, off the client's clock, until
      drv_httpd_answer is called for it from the loop (a waiting rollout, a
      held acknowledgement).
    on_done tells that the request is over, answered or not (the client may
    have left while it waited): its user pointer is the owner's to free.

    Every connection is under the one connection policy (drv_conn_policy:
    deadlines, per-address and total caps, the body budget). A drain stops
    accepting, answers with "Connection: close" and gives idle keep-alive
    connections a second. */
#ifndef DRV_HTTPD_H
#define DRV_HTTPD_H

#include "drover/drv_conn_policy.h"
#include "drover/drv_http_upload.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct MHD_Connection;
struct MHD_Response;

typedef struct drv_httpd_t drv_httpd_t;
typedef struct drv_httpd_req_t drv_httpd_req_t;

typedef void(drv_httpd_fn)(void *arg, drv_httpd_req_t *req);

typedef struct {
    const char *name;            // in logs: "http admin", "http receiver"
    int listen_fd;               // a bound, listening socket to serve (ours to close), or -1 ...
    const struct sockaddr *addr; // ... the address to bind and listen on
    drv_conn_limits_t limits;
    int idle_secs;         // MHD's own timeout of a connection that says nothing
    size_t max_body_bytes; // one request's body as sent; past it drv_httpd_body(req)->too_large
    //  NULL, or the path and query's percent-decoding (in place; returns the new length).
    size_t (*unescape)(char *text);
    //  Both, or neither: HTTPS with this certificate (chain) and key, PEM
    //  text (libmicrohttpd's TLS, GnuTLS). Kept by the caller while the server runs.
    const char *tls_cert_pem;
    const char *tls_key_pem;
    drv_httpd_fn *on_head;
    drv_httpd_fn *on_body;
    drv_httpd_fn *on_done; // NULL: nothing to free
    void *arg;
} drv_httpd_config_t;

//  NULL with the reason in err.
drv_httpd_t *drv_httpd_new(const drv_httpd_config_t *config, char *err, size_t errlen);
//  Requests still waiting for an answer get 503; answers already given
//  are sent for at most flush_ms; then every connection is closed.
void drv_httpd_destroy(drv_httpd_t **self_p, int64_t flush_ms);

//  The descriptor to poll for reading; -1 once drained with no connection left.
int drv_httpd_fd(drv_httpd_t *self);
//  Its listening socket (-1: none), for handing over across an upgrade in place.
int drv_httpd_listen_fd(drv_httpd_t *self);
//  Milliseconds until the server has something to do without input, or -1.
int64_t drv_httpd_timeout_ms(drv_httpd_t *self);
//  Does what is ready; the callbacks run here.
void drv_httpd_run(drv_httpd_t *self);
//  Stops accepting (the listening socket's copy is closed; see above).
void drv_httpd_drain(drv_httpd_t *self);
drv_conn_policy_t *drv_httpd_policy(drv_httpd_t *self);

//  The request.
const char *drv_httpd_method(const drv_httpd_req_t *req);
const char *drv_httpd_url(const drv_httpd_req_t *req);                      // path, decoded, without the query
const char *drv_httpd_header(const drv_httpd_req_t *req, const char *name); // NULL: absent
int64_t drv_httpd_content_length(const drv_httpd_req_t *req);               // -1: absent or not a number
//  The client's IP address as text into out ("" when not known: a Unix socket).
void drv_httpd_peer(const drv_httpd_req_t *req, char *out, size_t size);
struct MHD_Connection *drv_httpd_connection(drv_httpd_req_t *req);
drv_http_upload_t *drv_httpd_body(drv_httpd_req_t *req); // whole in on_body; released after it
void drv_httpd_set_user(drv_httpd_req_t *req, void *user);
void *drv_httpd_user(const drv_httpd_req_t *req);

//  Answers the request with resp (taken: the caller must not touch it
//  again). From on_head or on_body it is queued at once; later, the
//  suspended request is resumed and answered from the next run. A second
//  answer is dropped.
void drv_httpd_answer(drv_httpd_req_t *req, unsigned int status, struct MHD_Response *resp);
//  The answer goes on (an event stream): no deadline from now, and the
//  first to go when a newcomer needs room. Call before drv_httpd_answer.
void drv_httpd_streaming(drv_httpd_req_t *req);
//  For a streaming answer's content reader: park the connection when
//  nothing is queued (from the reader), wake it when something is.
void drv_httpd_park(drv_httpd_req_t *req);
void drv_httpd_wake(drv_httpd_req_t *req);

#endif
