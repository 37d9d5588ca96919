/*  drv_http_guard — the HTTP admin's connection budget: what keeps slow or
    greedy clients from starving the probes (contract 6.1).

    - Each request may take at most DRV_HTTP_REQUEST_SECS of the client's
      time (sending its head and body, reading the answer); time the engine
      spends on it (a rollout with wait=true) does not count.
    - Each client address holds at most per_client connections and all
      clients together at most total; a new connection past either evicts
      the oldest connection of that address (or of anyone) that is still
      sending its request. A probe therefore always gets in: it evicts a
      stalled client instead of waiting behind it.
    - Request bodies buffered at once are bounded by body_budget bytes.

    Connections are registered from libmicrohttpd's thread; a sweeper
    thread enforces the deadlines by shutting the socket down, which MHD
    then sees and closes. */
#ifndef DRV_HTTP_GUARD_H
#define DRV_HTTP_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define DRV_HTTP_REQUEST_SECS 10

typedef struct drv_http_guard_t drv_http_guard_t;
typedef struct drv_http_conn_t drv_http_conn_t;

drv_http_guard_t *drv_http_guard_new(int per_client, int total, size_t body_budget);
void drv_http_guard_destroy(drv_http_guard_t **self_p);

//  A new connection on fd from addr. Returns its record (never NULL).
drv_http_conn_t *drv_http_guard_open(drv_http_guard_t *self, int fd, const struct sockaddr *addr);
void drv_http_guard_close(drv_http_guard_t *self, drv_http_conn_t *conn);

//  The request was handed to the engine: its time stops counting.
void drv_http_guard_dispatched(drv_http_guard_t *self, drv_http_conn_t *conn);
//  The answer is being sent, or the next request is awaited: the client's
//  clock runs again, from now.
void drv_http_guard_client_turn(drv_http_guard_t *self, drv_http_conn_t *conn);

//  The answer is a stream that goes on: no deadline, but the first to go
//  when a newcomer (a probe) needs its place.
void drv_http_guard_streaming(drv_http_guard_t *self, drv_http_conn_t *conn);

//  Body bytes: take returns false when the budget cannot hold more.
bool drv_http_guard_body_fits(drv_http_guard_t *self, size_t bytes);
bool drv_http_guard_take_body(drv_http_guard_t *self, size_t bytes);
void drv_http_guard_give_body(drv_http_guard_t *self, size_t bytes);

//  Connections cut so far (deadline or eviction), for logs and tests.
int64_t drv_http_guard_cut(drv_http_guard_t *self);

#endif
