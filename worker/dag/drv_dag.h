/*  drv_dag — one pipeline's node graph inside a worker: receivers feed batches
    through processors to exporters. Records are msgpack maps that live in a
    per-batch zone, cleared after each batch, so the hot path does not malloc
    per record. */
#ifndef DRV_DAG_H
#define DRV_DAG_H

#include "drover/drv_problems.h"
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct drv_dag_t drv_dag_t;

typedef struct {
    const char *group;
    const char *pipeline;
    int64_t generation;
    int core;
    const char *buffer_dir; // engine.buffer_dir (disk buffers live under it), or NULL
    int shares;             // instances the pipeline runs (they split policies.buffer.max_bytes)
    const char *run_dir;    // engine.run_dir: where the engine's instances meet (locks), or NULL
} drv_dag_identity_t;

//  The kinds a DAG builds its nodes from, handed over by whoever builds it
//  (worker/nodes/drv_nodes.h has every kind), as nginx's core walks the
//  modules the build gives it: the DAG never names a kind.
struct drv_node_kind_t;
typedef struct {
    const struct drv_node_kind_t *const *list;
    size_t count;
} drv_kinds_t;

//  Builds the graph from a normalized spec and initialises every node: files
//  opened, sockets connected. Returns NULL with the reason in err when any node
//  cannot start; such an instance never becomes ready.
drv_dag_t *drv_dag_new(const json_t *spec, const drv_dag_identity_t *who, const drv_kinds_t *kinds, char *err,
                       size_t errlen);
//  Builds the DAG in probe mode (drv_node_probe set) and tears it down:
//  each node that cannot start adds its problem (path "nodes.ID") to problems.
void drv_dag_probe(const json_t *spec, const drv_dag_identity_t *who, const drv_kinds_t *kinds,
                   drv_problems_t *problems);
void drv_dag_destroy(drv_dag_t **self_p);

//  Feeds one producer message (a msgpack map or array of maps) into a
//  receiver:zmq node. Returns the records taken, or -1 with the reason in err
//  when the message is malformed (counted as an error, nothing forwarded).
int drv_dag_ingest(drv_dag_t *self, const char *node, const void *data, size_t size, char *err, size_t errlen);

//  Runs the generators that are due. Returns records emitted and sets
//  *wait_us to how long until the next one is due (-1: none pending).
int drv_dag_generate(drv_dag_t *self, int64_t now_us, int64_t *wait_us);

//  The descriptors of the receivers that read sockets, at most max: fds[i]
//  belongs to node nodes[i], which drv_dag_readable is called with. While
//  an exporter is backlogged, receivers that pause then are left out.
size_t drv_dag_fds(drv_dag_t *self, int *fds, size_t *nodes, size_t max);
//  Node `node` (from drv_dag_fds) is readable or its timeout is due: it
//  reads and emits. Returns records emitted.
int drv_dag_readable(drv_dag_t *self, size_t node);
//  A draining memory-buffered instance whose exporters that still hold
//  anything are all failing hands it to the next instance of the pipeline
//  (drv_dag_handover.c; tried at most every 500 ms), so that it may exit.
void drv_dag_hand_over(drv_dag_t *self);
//  True when every node can serve (drv_node_kind_t.ready): the instance is READY.
bool drv_dag_ready(drv_dag_t *self);
//  A draining instance may exit: no node but an exporter behind (whose
//  backlog the log keeps) has a descriptor left, and drv_dag_buffer_empty.
bool drv_dag_drained(drv_dag_t *self);
//  droverd has this process's last counts (it said DRAINED): saved so with
//  a disk buffer's positions, and the next process does not go on from
//  them (drv_dag_counts.c).
void drv_dag_positions_final(drv_dag_t *self);
//  Milliseconds until a network receiver has work without input, or -1.
int64_t drv_dag_timeout_ms(drv_dag_t *self);
//  The instance drains: network receivers take nothing new and finish what
//  they took; drv_dag_fds is empty once they are done.
void drv_dag_drain(drv_dag_t *self);

//  Node `node` (from drv_dag_fds) has work due now without input.
bool drv_dag_due(drv_dag_t *self, size_t node);

//  The last input taken (drv_node_taken): a broker batch fed through
//  drv_dag_ingest may be acknowledged once drv_dag_settle returns it or more.
int64_t drv_dag_input(const drv_dag_t *self);
//  Every input up to the returned one may be acknowledged: what exporters
//  took of it is exported (or dropped for good and counted) or, with a
//  disk buffer, it is durable in the log. Receivers answering then are told
//  (ack: true ones once exported). Without exporters that finish later and
//  without a disk buffer, the last input. Also syncs the disk buffer when due.
int64_t drv_dag_settle(drv_dag_t *self);
//  With a disk buffer: feeds inputs waiting in its log, oldest first, while
//  the exporters can take them. Returns inputs fed.
int drv_dag_pump(drv_dag_t *self);
//  True when nothing taken is left unsettled in a disk buffer but what
//  exporters behind the others hold (the log keeps it for them; always
//  true without one).
bool drv_dag_buffer_empty(const drv_dag_t *self);
//  A descriptor to poll for the disk buffer (readable: a sync finished;
//  drv_dag_settle takes it), or -1.
int drv_dag_buffer_fd(const drv_dag_t *self);
//  The disk buffer's figures as JSON (new reference), or NULL without one.
json_t *drv_dag_buffer_stats(drv_dag_t *self);
//  Upstream can send nothing more until what is held settles: exporters
//  close their open batches now.
void drv_dag_flush(drv_dag_t *self);
//  True while no more input may be taken: an exporter holds as much as it
//  may or, with a disk buffer, the buffer is full.
bool drv_dag_backlogged(drv_dag_t *self);

bool drv_dag_has_zmq_receivers(const drv_dag_t *self);

//  The instance's counters, from its nodes': records in (its receivers'),
//  out (its exporters'), and every node's errors plus batches for a
//  receiver it does not have.
void drv_dag_counters(const drv_dag_t *self, int64_t *records_in, int64_t *records_out, int64_t *errors);
//  Each node's counters as {"node": [in, out, dropped, errors]}, exporters'
//  followed by [retries, backlog, failing_ms, last_error, last_failure_age_ms], and last, once
//  the node timed anything, its durations (drv_histo_json) (new reference).
json_t *drv_dag_node_counters(drv_dag_t *self);

#endif
