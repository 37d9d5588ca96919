/*  drv_export — what the exporters that post over HTTP (exporter:http,
    exporter:otlp) share: records gathered into batches, each batch encoded
    once when it closes and posted with libcurl's multi interface inside the
    instance's own loop (one epoll descriptor the worker polls, as it polls
    the HTTP receivers), retried with backoff until a 2xx, or dropped when
    retrying cannot help. A batch holds the inputs it came from (drv_node
    holding) until then, so what a producer was acknowledged is exported.

    A batch closes at batch.max_records, at batch.max_bytes (of records as
    msgpack) or batch.max_delay_ms after its first record, and at once
    while draining. Up to DRV_EXPORT_IN_FLIGHT batches are posted at a
    time. Retried: connection errors and timeouts, 429, 502, 503 and 504,
    after retry.initial_ms doubling to retry.max_ms (±20% jitter), or after
    the Retry-After the server gave; a batch still failing
    retry.max_elapsed_secs after its first attempt (0: never) is dropped.
    Any other answer but a 2xx drops the batch at once. Dropped records
    count in the node's errors and the reason is logged (every 5 s at
    most). What waits is the exporter's queue (drv_queue.h): DRV_EXPORT_QUEUE_BYTES
    of records (packed, waiting in closed and open batches) unless `queue`
    says otherwise; full, it blocks (receivers push back until some are
    posted) or drops its oldest waiting batch. */
#ifndef DRV_EXPORT_H
#define DRV_EXPORT_H

#include "drv_buf.h"
#include "drv_node.h"
#include "drv_schemas.h"

#include <jansson.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DRV_EXPORT_IN_FLIGHT 4
#define DRV_EXPORT_QUEUE_BYTES (64 * 1024 * 1024) // queue.max_bytes when not given
#define DRV_EXPORT_LANES 4
#define DRV_EXPORT_RETRY_AFTER_MAX_MS (300 * 1000) // a backend's Retry-After is honoured up to this

typedef struct drv_export_t drv_export_t;
typedef struct batch_t drv_export_batch_t;

//  What became of one attempt to send a batch.
typedef enum { DRV_EXPORT_DONE, DRV_EXPORT_RETRY, DRV_EXPORT_DROP } drv_export_verdict_t;

//  Encodes one batch of count records (maps, the exporter's own copies)
//  into body (empty when called), once. Returns 0, or -1 with the reason in
//  err: the batch is then dropped and counted.
typedef int(drv_export_encode_fn)(void *arg, int lane, const msgpack_object *records, size_t count, drv_buf_t *body,
                                  char *err, size_t errlen);

typedef struct {
    const char *url; // where the lane's batches are posted
    const char *content_type;
} drv_export_lane_t;

//  A kind that sends batches itself rather than posting them over HTTP
//  (exporter:kafka): batching, the queue, retries and settling stay
//  drv_export's; sending is the kind's, on the same loop.
typedef struct {
    //  Starts sending a closed batch's body (encoded once, kept for
    //  retries); *state is the kind's own for this batch (NULL at its first
    //  attempt), kept across attempts. What came of it is told with
    //  drv_export_sent, from run. 0, 1 when nothing was left to send (the
    //  batch is done: what it held is written or given up), or -1 with the
    //  reason in err: the attempt failed at once (tried again after backoff).
    int (*send)(void *arg, drv_export_batch_t *batch, void **state, const char *body, size_t size, char *err,
                size_t errlen);
    //  The batch goes (delivered, dropped, handed over or the exporter
    //  ends): its state is the kind's to free, once nothing refers to it.
    void (*forget)(void *arg, void *state);
    //  The descriptor the worker polls, and what to do when it is readable.
    int (*fd)(void *arg);
    void (*run)(void *arg);
    //  When (mono ms) run is due without the descriptor being readable (a
    //  libcurl timeout), or -1; NULL: never.
    int64_t (*due_ms)(void *arg);
    size_t in_flight; // batches sent at a time (0: DRV_EXPORT_IN_FLIGHT)
    //  Optional: the kind encodes its batches itself, as their records come
    //  (exporter:s3 uploads an object's first parts while it fills). Told
    //  when a lane's batch closes, before it is queued; *state (NULL) is
    //  then the batch's as send's is, and body is NULL at every send.
    void (*closed)(void *arg, drv_export_batch_t *batch, void **state);
} drv_export_sender_t;

typedef struct {
    drv_export_lane_t lanes[DRV_EXPORT_LANES]; // batches of one lane go to one URL
    size_t lane_count;
    bool grpc; // each batch is a unary gRPC call of the lane's URL (drv_export_grpc.c)
    drv_export_encode_fn *encode;
    void *arg;
    const drv_export_sender_t *sender; // NULL: posted over HTTP with libcurl
    //  Posted over HTTP: headers of the protocol sent with every post
    //  ("Content-Encoding: snappy"; NULL-ended, or NULL), the body then not
    //  gzip'd whatever compression says; and batches posted at a time (0:
    //  DRV_EXPORT_IN_FLIGHT; 1 keeps a series' samples in order across
    //  batches, as remote write needs).
    const char *const *headers;
    size_t in_flight;
    //  A lane's batches are posted one at a time, oldest first (in_flight
    //  then bounds the lanes together): an exporter that shards what must
    //  arrive in order over lanes of one URL (remote write's series).
    bool lanes_in_order;
} drv_export_format_t;

//  Sets an exporter up from its normalized config. NULL with the reason in
//  err (a CA file that cannot be read, no memory).
drv_export_t *drv_export_new(drv_node_t *node, const json_t *config, const drv_export_format_t *format, char *err,
                             size_t errlen);
void drv_export_destroy(drv_export_t **self_p);

//  Takes one record (held by the batch zone) into the lane's open batch,
//  which remembers the input it came from.
void drv_export_record(drv_export_t *self, int lane, const msgpack_object *record);

//  A sender's attempt ended (drv_export_sender_t): verdict and why (for
//  the log) decide the batch's fate as an HTTP answer's would; secs is
//  how long it took.
void drv_export_sent(drv_export_t *self, drv_export_batch_t *batch, drv_export_verdict_t verdict, const char *why,
                     double secs);

//  Some of a batch's records can never be delivered (a Kafka message over
//  the size a broker takes): errors and given up now, while the rest of
//  the batch goes on; its delivery then counts only the rest.
void drv_export_gave_up(drv_export_t *self, drv_export_batch_t *batch, size_t records, const char *why);

//  The lane a batch is of.
int drv_export_batch_lane(const drv_export_batch_t *batch);
//  A closed batch's records, as taken (*count of them).
const msgpack_object *drv_export_batch_records(const drv_export_batch_t *batch, size_t *count);
//  The records a lane's open batch has taken so far (*count of them,
//  *bytes packed): they stay in this order into the batch it closes as.
const msgpack_object *drv_export_open_records(const drv_export_t *self, int lane, size_t *count, size_t *bytes);

//  Node hooks; node->state starts with a drv_export_t *.
int drv_export_node_fd(drv_node_t *node);
int drv_export_node_readable(drv_node_t *node);
int64_t drv_export_node_timeout_ms(drv_node_t *node);
void drv_export_node_drain(drv_node_t *node);
void drv_export_node_flush(drv_node_t *node);
int64_t drv_export_node_holding(drv_node_t *node);
bool drv_export_node_backlogged(drv_node_t *node);
int64_t drv_export_node_backlog(drv_node_t *node);
void drv_export_node_queue(drv_node_t *node, int64_t *bytes, int64_t *oldest_ms);
int64_t drv_export_node_hand_over(drv_node_t *node, bool (*put)(void *arg, const msgpack_object *records, size_t n),
                                  void *arg, bool forget);

//  The hooks above, for a kind's drv_node_kind_t.
#define DRV_EXPORT_NODE_HOOKS                                                                                          \
    .fd = drv_export_node_fd, .readable = drv_export_node_readable, .timeout_ms = drv_export_node_timeout_ms,          \
    .drain = drv_export_node_drain, .flush = drv_export_node_flush, .holding = drv_export_node_holding,                \
    .backlogged = drv_export_node_backlogged, .backlog = drv_export_node_backlog, .queue = drv_export_node_queue,      \
    .hand_over = drv_export_node_hand_over

#endif
