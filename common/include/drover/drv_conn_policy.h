/*  drv_conn_policy — the one connection policy of every listener droverd or
    an instance serves (the HTTP admin, receiver:http, receiver:otlp,
    receiver:syslog over TCP): what keeps slow, silent or greedy clients
    from starving everyone else (docs/security.md, "Connections").

    - A connection is on the client's clock while the client owes us bytes:
      sending a request (its head and body), reading the answer, or, between
      requests, saying anything at all. Each has a deadline (request_ms,
      idle_ms); past it the connection is cut. Time the engine spends (a
      held acknowledgement, a rollout with wait=true) does not count.
    - Each client address holds at most per_address connections, all
      together at most total; a new connection past either cuts the oldest
      connection of that address (or of anyone) that is on the client's
      clock, or else the oldest open stream (an event stream, a tap: they
      have no deadline). A probe or a legitimate sender therefore always
      gets in: it displaces a stalled client or a stream instead of
      queueing behind them.
    - Request bodies are charged to one budget as their bytes arrive (never
      from what a header declares); when it is full, an address holding
      more than its share loses its oldest connection still sending.

    Single-threaded and passive: the owner calls it from its loop, asks it
    when the next deadline is, and lets it cut overdue connections; cutting
    is shutdown(2) on the socket, so the owner's own reader sees the end of
    the stream and closes as usual. */
#ifndef DRV_CONN_POLICY_H
#define DRV_CONN_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct {
    int per_address;    // connections one client address may hold
    int total;          // connections all clients may hold
    int64_t request_ms; // a request's time on the client's clock
    int64_t idle_ms;    // silence between requests
    size_t body_budget; // request body bytes held at once, over all connections
} drv_conn_limits_t;

typedef struct drv_conn_policy_t drv_conn_policy_t;
typedef struct drv_conn_t drv_conn_t;

//  A network receiver's `connections` config ({per_address, total,
//  idle_secs, request_secs}, each optional; docs/nodes.md) over the
//  defaults already in limits. 0, or -1 with what is wrong in err (and
//  limits as far as it was good). connections NULL: the defaults.
struct json_t;
int drv_conn_limits_config(const struct json_t *connections, drv_conn_limits_t *limits, char *err, size_t errlen);

drv_conn_policy_t *drv_conn_policy_new(const drv_conn_limits_t *limits, const char *name);
void drv_conn_policy_destroy(drv_conn_policy_t **self_p);

//  A new connection on fd from addr (NULL: unknown), on the client's clock
//  for a request. May cut others (or this one) to keep the caps. Never NULL.
drv_conn_t *drv_conn_policy_open(drv_conn_policy_t *self, int fd, const struct sockaddr *addr, int64_t now_ms);
void drv_conn_policy_close(drv_conn_policy_t *self, drv_conn_t *conn);
//  The client's IP address as text into out ("" when none: a Unix socket, or conn NULL).
void drv_conn_peer(const drv_conn_t *conn, char *out, size_t size);
//  The same of an address (a datagram's sender): an IPv4 one mapped into IPv6 as IPv4.
void drv_conn_addr_text(const struct sockaddr *addr, char *out, size_t size);

//  The clock a connection is on now: the client owes a request (or is
//  reading its answer); the engine holds it; it is idle between requests.
void drv_conn_policy_request(drv_conn_policy_t *self, drv_conn_t *conn, int64_t now_ms);
void drv_conn_policy_engine(drv_conn_policy_t *self, drv_conn_t *conn);
void drv_conn_policy_idle(drv_conn_policy_t *self, drv_conn_t *conn, int64_t now_ms);
//  A response that goes on (SSE, a tap): no deadline, but evicted before anything else the engine holds.
void drv_conn_policy_stream(drv_conn_policy_t *self, drv_conn_t *conn);
//  True when the policy already cut it.
bool drv_conn_policy_was_cut(const drv_conn_t *conn);

//  Cuts the connections past their deadline; returns ms until the next
//  deadline (-1: none). Cheap when nothing is due.
int64_t drv_conn_policy_expire(drv_conn_policy_t *self, int64_t now_ms);

//  Body bytes, charged as they arrive, through the connection they came on
//  (NULL: not told apart): false when the budget cannot hold more. A refusal
//  while another address holds more than its share of the budget (the
//  budget over the addresses holding any) cuts that address's oldest
//  connection still sending, so that its bytes come back for the refused
//  sender's retry. True from body_fits when a body of this size would fit in
//  what is left now (a declared length is judged with this, never reserved).
bool drv_conn_policy_body_fits(const drv_conn_policy_t *self, size_t bytes);
bool drv_conn_policy_take_body(drv_conn_policy_t *self, drv_conn_t *conn, size_t bytes);
void drv_conn_policy_give_body(drv_conn_policy_t *self, drv_conn_t *conn, size_t bytes);
size_t drv_conn_policy_body_used(const drv_conn_policy_t *self);

//  Connections cut so far (deadline or eviction), and open now.
int64_t drv_conn_policy_cut_count(const drv_conn_policy_t *self);
int drv_conn_policy_open_count(const drv_conn_policy_t *self);

#endif
