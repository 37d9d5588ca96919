/*  drv_node — a node kind: its config schema (read by the spec validator)
    and its code (run by the DAG), in one file per kind under worker/nodes/,
    listed once in drv_nodes.c. A new kind is one new file and one line
    there.

    A node gets records from the DAG (run) and hands what it emits to the
    nodes after it (drv_node_forward); receivers are driven by the worker
    instead: receiver:zmq through drv_dag_ingest, generators through their
    generate hook. Everything a node allocates per batch comes from the
    batch zone (drv_node_alloc), cleared after each batch. */
#ifndef DRV_NODE_H
#define DRV_NODE_H

#include "drv_buf.h"
#include "drv_record_path.h"
#include "drv_dag.h"

#include "drover/drv_histo.h"
#include "drover/drv_node_schema.h"

#include <jansson.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

typedef struct drv_node_t drv_node_t;

typedef struct drv_node_kind_t {
    const drv_node_schema_t *schema; // worker/schemas/: what its config takes
    //  Sets node->state up from the normalized config: files opened, sockets
    //  connected. Returns 0, or -1 with the reason in err (the instance then
    //  never becomes ready).
    int (*init)(drv_node_t *node, const json_t *config, char *err, size_t errlen);
    //  Takes a batch of records (maps in the batch zone). NULL: forwards as is.
    void (*run)(drv_node_t *node, const msgpack_object *records, size_t n);
    //  Receivers that make records themselves: emits what is due at now_us
    //  and sets *wait_us until the next (-1: none). Returns records emitted.
    int (*generate)(drv_node_t *node, int64_t now_us, int64_t *wait_us);
    //  Receivers that read a socket (network receivers): the descriptor the
    //  worker polls (-1: none, or nothing left once drained), and what to do
    //  when it is readable or the node's timeout is due: read what is there,
    //  without blocking, and emit it. Returns records emitted.
    int (*fd)(drv_node_t *node);
    int (*readable)(drv_node_t *node);
    //  Milliseconds until the node has work without input (-1: none). NULL: -1.
    int64_t (*timeout_ms)(drv_node_t *node);
    //  The node can serve: a receiver:kafka once its group gave it an
    //  assignment (or its session timeout went by). The instance says
    //  READY once every node is, so that a rollout drains the generation
    //  before only once its successor reads (docs/operations.md, "What
    //  each operation may repeat"). NULL: at once.
    bool (*ready)(drv_node_t *node);
    //  The instance is draining: take nothing new, finish what was taken;
    //  fd says -1 once done. NULL: fd is not polled any more.
    void (*drain)(drv_node_t *node);
    //  Exporters that finish later (exporter:http, exporter:otlp): the
    //  oldest input (drv_node_input) whose records the node holds unfinished,
    //  or -1 when it holds none. Input older than the oldest held by any node
    //  is settled: acknowledged upstream (drv_dag_settle). NULL: holds none.
    int64_t (*holding)(drv_node_t *node);
    //  True while the node holds as much as it may: receivers then push back
    //  (HTTP: 429; sockets and the broker: not read). NULL: never.
    bool (*backlogged)(drv_node_t *node);
    //  Exporters: the records held, not delivered yet. NULL: 0.
    int64_t (*backlog)(drv_node_t *node);
    //  Exporters: what their queue holds (worker/export/drv_queue.h): its
    //  bytes, and when the oldest of it was taken (mono ms; 0: nothing). NULL: empty.
    void (*queue)(drv_node_t *node, int64_t *bytes, int64_t *oldest_ms);
    //  Upstream waits for what the node holds (the broker's credit is all
    //  spent): finish it now rather than when its batch would close. NULL:
    //  nothing to do.
    void (*flush)(drv_node_t *node);
    //  Receivers that answer once their input settled (ack: true): every
    //  input up to and including upto is settled. NULL: nothing to answer.
    void (*settled)(drv_node_t *node, int64_t upto);
    //  Receivers that log what they took as it came (drv_node_emit_input):
    //  makes its records again from those bytes, read back from a disk
    //  buffer, and hands them on (drv_node_forward). Returns the records,
    //  or -1 when the bytes are not such an input (counted as an error).
    int (*replay)(drv_node_t *node, const void *data, size_t size);
    //  Exporters of a memory-buffered instance that drains while they cannot
    //  deliver (docs/operations.md, "Exporter queues"): forget false hands
    //  each batch they hold to put, oldest first (records the kind still
    //  has; put false stops it), and returns the records put, or -1 when
    //  put failed; forget true then lets all of it go (the next instance
    //  has it). NULL: nothing is handed over.
    int64_t (*hand_over)(drv_node_t *node, bool (*put)(void *arg, const msgpack_object *records, size_t n), void *arg,
                         bool forget);
    //  What the node tells of itself beyond its counters, for the status
    //  and /metrics (drover/drv_node_counters.h): a new JSON object whose
    //  keys join the node's status (receiver:kafka: its partitions, their
    //  offsets and lag), or NULL. NULL: nothing.
    json_t *(*details)(drv_node_t *node);
    //  Frees node->state. NULL: free(node->state).
    void (*destroy)(drv_node_t *node);
    bool fed_by_broker; // receives producer messages from the broker (drv_dag_ingest)
    //  A receiver whose socket is not read while an exporter is backlogged
    //  (drv_dag_fds leaves it out): its senders are held back by the socket
    //  (TCP) or lose what overflows it (UDP). HTTP receivers are read and
    //  answer 429 instead.
    bool pauses_when_backlogged;
} drv_node_kind_t;

struct drv_node_t {
    char id[64];
    const drv_node_kind_t *kind;
    drv_dag_t *dag; // the graph it belongs to
    int *to;        // indexes of the nodes it feeds
    size_t to_count;
    bool first_copy;      // each record's first copy reaches it (drv_dag_counters' records_out: exporters so marked)
    void *state;          // the kind's own
    int64_t last_warn_ms; // rate-limits its export warnings
    //  What passed through it since the instance started (drv_dag_node_counters):
    //  records given to it (receivers: read), handed on (exporters: exported),
    //  not handed on (a filter's misses, nil from a script, a record dropped
    //  after a script error), and errors.
    //  Exporters' dropped are the records they gave up on. Counted once, by
    //  the process that took the input (drv_dag_counts.c): inputs up to
    //  counted_upto, read back from the log, were counted before a restart.
    int64_t in, out, dropped, errors;
    int64_t counted_upto;
    //  Exporters: how delivery goes, for the heartbeat (drv_dag_node_counters)
    //  and the pipeline's exporter_failing condition.
    int64_t retries;             // attempts made again after a failure
    int64_t queue_dropped;       // records dropped because its queue was full (when_full: drop_oldest)
    int64_t failing_since_ms;    // mono ms of the first failure since the last delivery (0: delivering)
    int64_t last_failure_ms;     // mono ms of the last failed attempt (0: none)
    int64_t recovered_ms;        // mono ms of the first delivery after a failure (0: none yet)
    int64_t backlogged_since_ms; // mono ms it was first seen backlogged (0: not backlogged)
    char last_error[200];        // why the last attempt failed
    //  Exporters: their own position in the log, a disk buffer's or the
    //  memory log (drv_dag_positions.c). lag_next: 0 while fed with the others, else
    //  the next input it reads again on its own (it fell behind);
    //  delivered_upto: inputs up to it it had settled before a restart
    //  (never fed to it again); its queue's bound in the log (0: the
    //  buffer's) and what happens there (drv_queue.h sets them).
    int64_t lag_next, delivered_upto;
    int64_t lag_records, lag_oldest_ms; // behind: records of the log not read yet, wall ms of the oldest
    int64_t lag_told_ms;                // mono: falling behind and catching up are said at most every 5 s
    int64_t queue_told_ms;              // mono: its drops in the log are said at most once a second
    struct drv_buffer_reader_t *catch_up;
    int64_t log_max_bytes;
    bool log_drop_oldest;
    bool log_full; // at its bound in the log with when_full: block: the pipeline pushes back
    //  Receivers: each request's time to its answer; exporters: each post's
    //  (drv_node_observe). Reported with the counters once it has any.
    drv_histo_t duration;
    bool ack; // config.ack: answers once exported (else, with a disk buffer, once durable)
    //  A tap samples what leaves it (drv_tap.c): DRV_TAP_OFF costs one check per batch.
    uint8_t tap;           // DRV_TAP_OFF, DRV_TAP_OUTPUT (what it hands on), DRV_TAP_INPUT (exporters)
    int tap_taken;         // samples taken in the current window
    int64_t tap_window_ms; // mono ms the window started
};

enum { DRV_TAP_OFF = 0, DRV_TAP_OUTPUT, DRV_TAP_INPUT };

//  ---- what the DAG offers node kinds (drv_dag.c)

//  Memory that lives until the end of the current batch.
void *drv_node_alloc(drv_node_t *node, size_t size);
//  The zone drv_node_alloc takes from, as it is (processors building
//  records with msgpack's or drv_mpjson's helpers).
msgpack_zone *drv_node_zone(drv_node_t *node);
//  A record path (drover/drv_path.h) as msgpack keys living as long as
//  the DAG (its config values): 0, or -1 (not a path; the schema said so).
int drv_node_path(drv_node_t *node, const char *text, drv_record_path_t *out);
//  Records a receiver made itself, packed as a msgpack array of maps (or
//  one map): decoded into the batch zone (cleared first), counted in and
//  handed on. Returns the records, or -1 with the reason in err when the
//  bytes are not records (counted as an error; nothing is handed on), or
//  DRV_NODE_FULL when a disk buffer is full or an exporter behind cannot
//  be kept the input (nothing taken: push back).
int drv_node_emit_packed(drv_node_t *node, const void *data, size_t size, char *err, size_t errlen);
#define DRV_NODE_FULL (-2)
//  Records a receiver built itself as objects, never packed: the batch
//  zone, cleared, to build them in; then emit_objects counts them in and
//  hands them on. The receiver answers for them being records (maps whose
//  keys are unique at every depth, nested no deeper than DRV_MPCHECK_MAX_DEPTH);
//  what they point to must live until emit_objects returns. False when a
//  disk buffer is full, or the input cannot be kept for an exporter behind
//  (out of memory): nothing was taken, push back.
msgpack_zone *drv_node_batch_zone(drv_node_t *node);
bool drv_node_emit_objects(drv_node_t *node, const msgpack_object *records, size_t n);
//  The same for a receiver with a replay hook: with a disk buffer, what it
//  took (raw, in pieces: at most 4) is what goes into the log, and replay
//  makes the records again from it when it is read back.
bool drv_node_emit_input(drv_node_t *node, const struct iovec *raw, int raw_count, const msgpack_object *records,
                         size_t n);
//  A generator's batch (drv_dag_generate runs it as an input of its own
//  without a disk buffer, as part of the last input fed with one): counted
//  in and handed on, kept for exporters behind first without a disk
//  buffer: as raw (raw_count pieces: what the kind's replay makes the
//  records again from), or packed when raw is NULL.
void drv_node_emit_generated(drv_node_t *node, const msgpack_object *records, size_t n, const struct iovec *raw,
                             int raw_count);
//  Records a processor did not hand on (a filter's misses, nil from a
//  script, matching no route).
void drv_node_count_dropped(drv_node_t *node, size_t n);
//  A record the node failed on (a script's error): counted as an error,
//  the reason logged at most every 5 s per node.
void drv_node_record_error(drv_node_t *node, const char *what);
//  A producer's input a receiver refused before emitting: counted as an error.
void drv_node_count_refused(drv_node_t *node);
//  The input being run: one number per producer message, request, datagram
//  read or generated batch, increasing. An exporter that finishes later
//  remembers it (holding).
int64_t drv_node_input(const drv_node_t *node);
//  Inputs some of whose records an exporter gave up (never to be
//  delivered): a receiver that answers once settled (ack: true) asks
//  drv_node_input_gave_up and answers those as failed. Kept until settled,
//  at most DRV_NODE_GAVE_UP_MAX of them (past that the oldest are forgotten).
#define DRV_NODE_GAVE_UP_MAX 65536
void drv_node_inputs_gave_up(drv_node_t *node, const int64_t *inputs, size_t n);
bool drv_node_input_gave_up(const drv_node_t *node, int64_t input);
//  The last input taken: a receiver that answers once settled (or durable)
//  remembers it. Without a disk buffer, the input being run.
int64_t drv_node_taken(const drv_node_t *node);
//  True when the instance has a disk buffer: receivers answer once their
//  input is durable (ack: false) or exported (ack: true).
bool drv_node_buffered(const drv_node_t *node);
//  True when exporters may fall behind in a log (a disk buffer's, or the
//  memory log): their queue holds a few batches, the log the rest (drv_queue.h).
bool drv_node_logged(const drv_node_t *node);
//  True while an exporter of the instance is backlogged: receivers push back.
bool drv_node_backlogged(const drv_node_t *node);
//  A node finds records by their sender's address (processor:kubernetes,
//  associate from: connection, asks at init): from then on, receivers that
//  know it put it in each record's resource as client.address
//  (docs/kubernetes.md).
void drv_node_ask_peer(drv_node_t *node);
bool drv_node_wants_peer(const drv_node_t *node);
//  Receivers that know a record's sender: resource["client.address"] = peer
//  (len bytes, copied into the batch zone) in each of records, when the
//  DAG wants it; else nothing.
void drv_node_put_peer(drv_node_t *node, msgpack_object *records, size_t n, const char *peer, size_t len);
//  The index of the node called id in the same DAG, or -1.
int drv_node_find(const drv_node_t *node, const char *id);
//  Set in a probe (dry_run=instantiate, drover-worker --probe): a node's
//  init checks what it would open or create and leaves nothing behind.
extern bool drv_node_probe;
//  Hands records to one node of the same DAG (by index), as forwarding does.
void drv_node_send(drv_node_t *node, int target, const msgpack_object *records, size_t n);
//  Runs records through node itself (an exporter given what another
//  instance's exporter of its id held).
void drv_node_deliver(drv_node_t *node, const msgpack_object *records, size_t n);
//  Hands records on to every node after this one.
void drv_node_forward(drv_node_t *node, const msgpack_object *records, size_t n);
//  Records a receiver made itself (the others are counted in as they are
//  decoded or run), and records a node handed on other than through
//  drv_node_forward: an exporter's exported, a route's sent. The
//  instance's records_in and records_out are the receivers' in and the
//  exporters' out (drv_dag_counters).
void drv_node_count_in(drv_node_t *node, size_t n);
void drv_node_count_out(drv_node_t *node, size_t n);
//  An export that failed for n records: counted as errors once, logged at
//  most every 5 s per node (drv_node_export_warn logs without counting,
//  for retries of the same batch).
//  Both remember what as the node's last error, and the node as failing
//  from then until drv_node_count_out says it delivered again.
void drv_node_export_error(drv_node_t *node, size_t n, const char *what);
void drv_node_export_warn(drv_node_t *node, size_t n, const char *what);
//  A request answered (receivers) or a batch posted (exporters) in secs.
void drv_node_observe(drv_node_t *node, double secs);
//  An attempt to be made again (counted in retries).
void drv_node_count_retry(drv_node_t *node);
//  Records an exporter gave up on (counted in dropped; their errors were
//  counted by drv_node_export_error).
void drv_node_count_gave_up(drv_node_t *node, size_t n);
//  A JSON config value as a msgpack object that lives as long as the DAG.
int drv_node_object(drv_node_t *node, const json_t *value, msgpack_object *obj);
int drv_node_string_object(drv_node_t *node, const char *text, msgpack_object *obj);
//  The DAG's encoding buffer, reset, for one export at a time.
drv_buf_t *drv_node_buffer(drv_node_t *node);
//  Which instance this is.
const drv_dag_identity_t *drv_node_identity(drv_node_t *node);

#endif
