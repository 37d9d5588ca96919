/*  drv_grpc_internal — what the gRPC server's files share: its limits,
    a connection (drv_grpc_conn.c: bytes in and out, through OpenSSL or
    not, and nghttp2's session), a call on one stream (drv_grpc_call.c:
    nghttp2's callbacks, the message, the answer), and the server over
    them (drv_grpc_server.c). */
#ifndef DRV_GRPC_INTERNAL_H
#define DRV_GRPC_INTERNAL_H

#include "drv_grpc_frame.h"
#include "drv_grpc_server.h"

#include "drover/drv_conn_policy.h"

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define STREAMS 100                           // SETTINGS_MAX_CONCURRENT_STREAMS: calls at once on one connection
#define HEADER_BYTES 16384                    // one call's header block, as HPACK counts it (past it: 431)
#define HEADER_BLOCK_BYTES (4 * HEADER_BYTES) // past it a block is a bomb: the connection ends
#define WINDOW (1 << 20)                      // each stream's receive window
#define CONN_WINDOW (16 << 20)                // the connection's
#define NOTICE_MS 1000                        // a drain's notice waits at most this for the PING's answer
#define RETRY_MS 1000                         // RetryInfo's delay under backpressure
#define FIRST_BODY_BYTES 256 // a message's first allocation (charged): grown by doubling as bytes arrive
#define STREAM_CHECK_MS 1000 // how often calls are checked against connections.request_ms
#define READ_CHUNK 16384
#define OUT_CHUNK 65536 // what nghttp2 queued is written in pieces of about this

typedef struct conn_t conn_t;
typedef struct stream_t stream_t;

struct stream_t {
    conn_t *conn;
    int32_t id;
    int64_t head_us;       // mono µs its head began
    stream_t *next, *prev; // the connection's streams
    int path;              // -1: not one served
    int http_status;       // the head's fault (405, 415, 431), else 0
    bool post, grpc, gzip, bad_encoding;
    size_t header_bytes;
    uint8_t *body; // the message as it arrives (charged to the budget)
    size_t len, cap;
    bool answered; // a response was submitted: what arrives now is dropped
    bool holding;  // ack: waiting for its input to settle
    int64_t input;
    stream_t *next_held;
    drv_grpc_reply_t reply; // what goes out
    uint8_t prefix[DRV_GRPC_PREFIX];
    size_t sent; // of prefix + body
    char status_text[12];
    char message[1300]; // percent-encoded
    char *details;      // grpc-status-details-bin
};

struct conn_t {
    drv_grpc_server_t *server;
    int fd;
    SSL *ssl; // NULL: h2c
    bool handshaken;
    nghttp2_session *session;
    drv_conn_t *policy;
    uint8_t *pending; // what nghttp2 gave that the socket did not take yet
    size_t pending_len, pending_at, pending_cap;
    bool out_armed; // EPOLLOUT is asked for
    bool sniffed;   // the first bytes were looked at (HTTP/1.1?)
    bool dead;      // freed at the end of the server's turn
    bool dirty;     // answers were submitted outside its own turn: flush
    stream_t *streams;
    size_t block_bytes;  // what HPACK made of the header block being read
    int64_t progress_ms; // mono: a call began or message bytes came (what a PING or SETTINGS is not)
    int64_t notice_ms;   // a drain's notice went out at (0: none)
    bool goaway;         // the final GOAWAY went out
    int32_t last_id;     // the last stream it names: later ones are refused
    conn_t *next, *prev;
};

struct drv_grpc_server_t {
    drv_grpc_config_t config;
    int64_t next_stream_check_ms; // mono: calls past connections.request_ms are reset then
    int epoll_fd;
    int listen_fd; // -1 once draining
    SSL_CTX *tls;
    drv_conn_policy_t *policy;
    conn_t *conns;
    int conn_count;
    stream_t *held; // answers waiting for their input to settle
    bool draining;
    bool in_recv; // inside nghttp2's callbacks: no flushing, no freeing
};

//  ---- drv_grpc_conn.c

//  A connection accepted on fd (non-blocking); closes fd when it cannot.
void drv_grpc_conn_open(drv_grpc_server_t *self, int fd, const struct sockaddr *addr);
//  Its turn: handshake, read, hand to nghttp2, flush; sets dead when over.
void drv_grpc_conn_run(conn_t *c);
//  Sends what nghttp2 queued as far as the socket takes it. False when the
//  connection is over (an error, or nothing left to say or hear).
bool drv_grpc_conn_flush(conn_t *c);
//  Puts the connection on the clock its calls say (drv_conn_policy).
void drv_grpc_conn_clock(conn_t *c);
//  A drain's first step: GOAWAY notice and a PING.
void drv_grpc_conn_notice(conn_t *c);
//  Its second: the GOAWAY naming the last stream taken.
void drv_grpc_conn_goaway(conn_t *c);
//  Frees it, its calls and its socket (never inside nghttp2's callbacks).
void drv_grpc_conn_free(conn_t *c);

//  ---- drv_grpc_call.c

void drv_grpc_call_callbacks(nghttp2_session_callbacks *callbacks);
//  Submits the call's answer (reply, or the HTTP refusal in http_status).
void drv_grpc_call_submit(stream_t *s);
//  A call whose message did not come whole in time: reset (CANCEL), its bytes given back.
void drv_grpc_call_overdue(stream_t *s);
void drv_grpc_call_free(stream_t *s);

#endif
