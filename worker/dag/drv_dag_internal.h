/*  drv_dag_internal — the DAG's state, shared by the files of dag/, each
    calling only those below it: drv_node.c (what the DAG offers the node
    kinds), drv_dag_buffered.c (the disk buffer inputs wait in),
    drv_dag_input.c (records entering the DAG), drv_dag.c (building it,
    driving it, settling). drv_dag_positions.c keeps where each exporter
    stands in the log, with the counts drv_dag_counts.c saves beside them.
    drv_tap.c and drv_condition.c sit beside. */
#ifndef DRV_DAG_INTERNAL_H
#define DRV_DAG_INTERNAL_H

#include "drv_buf.h"
#include "drv_buffer.h"
#include "drv_dag.h"
#include "drv_node.h"
#include "drv_record_path.h"
#include "drv_ring.h"

#include <czmq.h>
#include <msgpack.h>

struct drv_dag_t {
    drv_node_t *nodes; // count nodes, in spec order
    size_t count;
    drv_dag_identity_t who;  // which instance (strings owned)
    msgpack_zone spec_zone;  // config values as msgpack objects, for the DAG's life
    zlist_t *spec_buffers;   // encoded config bytes that spec_zone objects point into
    msgpack_zone batch_zone; // records of the batch in flight; cleared per batch
    int64_t taken_ms;        // wall: when the input being taken was taken (its log time, its records' observed time)
    drv_buf_t out;           // exporter encoding buffer, reused
    int64_t unowned_errors;  // batches for a receiver the DAG does not have (the rest are the nodes')
    int64_t input;           // the last input taken (drv_node_taken)
    int64_t running;         // the input being run (drv_node_input): the last fed to the nodes
    int64_t settled;         // inputs up to this one are settled, receivers told
    int64_t *gave_up;        // inputs not settled yet some of whose records an exporter gave up
    size_t gave_up_count, gave_up_cap;
    //  A disk buffer (policies.buffer type: disk, drv_dag_buffered.c), or
    //  NULL: inputs are numbered by its log and wait in it, in order, until
    //  the nodes can take them.
    drv_buffer_t *buffer;
    //  Without one, the memory log (drv_memory_log.h): the inputs kept
    //  while an exporter is behind the others (drv_dag_positions.c).
    struct drv_memory_log_t *memory;
    int64_t told_durable;              // receivers answering once durable were told up to this
    int rerun_for;                     // an exporter catching up is being fed (its index), or -1
    const drv_buffer_input_t *feeding; // the input read back being run, or NULL
    bool generating;                   // a generator's batch is being run
    bool elsewhere;                    // the input being run was counted where it was taken (a hand-over)
    bool reported;                     // droverd has the counts (drv_dag_positions_final)
    bool counts_restored;              // counts saved by this instance's crashed process go on (drv_dag_counts.c)
    int64_t taken_counted_upto;        // inputs of the log up to it were counted in by the receivers that took them
    bool draining;                     // drv_dag_drain was called
    drv_record_path_t client_address;  // resource["client.address"] once asked for (drv_node_put_peer), else depth 0
    //  What drained instances' exporters held, being given to ours (drv_dag_handover.c).
    struct drv_handover_t *handover;
    bool handover_read_all;
    int64_t handover_scan_ms, handover_tried_ms; // mono: the next look for one; the last try to hand over
    drv_ring_t handover_pending; // int64_t[2]: [input, handover entry] fed and not settled, oldest first
    json_t *positions;           // each exporter's position as last saved (drv_dag_positions.c)
    int64_t saved_settled;       // every exporter had settled up to it when they were saved: the log may forget it
    int64_t positions_due_ms;    // mono: when they may be saved next
    msgpack_sbuffer packing;     // records packed for the log
    int64_t tap_per_sec;         // samples per second and tapped node (drv_tap.c)
    json_t *tap_samples;         // [[node, JSON text], ...] not sent yet, or NULL
    drv_buf_t tap_buf;           // rendering a sample
};

//  drv_dag_feed.c: an input read back run through the receiver it entered
//  at (*entry, or NULL): its records, or -1 when nothing can be made of it
//  here (the receiver that took it is of another kind now).
int drv_dag_feed(drv_dag_t *self, const drv_buffer_input_t *input, drv_node_t **entry);

//  drv_dag_buffered.c: opening the buffer (0, or -1 with err), taking
//  records into it (false: full, nothing taken), feeding what waits.
int drv_dag_buffer_open(drv_dag_t *self, const json_t *spec, char *err, size_t errlen);
//  raw: the receiver's own input (DRV_BUFFER_RAW, read back by its replay
//  hook), or NULL: records packed (DRV_BUFFER_RECORDS; packed already
//  when packed is given).
bool drv_dag_buffer_take(drv_node_t *node, const msgpack_object *records, size_t n, const void *packed, size_t size,
                         const struct iovec *raw, int raw_count);
//  drv_node.c: records packed as a batch (a msgpack array) into out, cleared first.
void drv_dag_pack_records(msgpack_sbuffer *out, const msgpack_object *records, size_t n);
//  drv_node.c: what node took as an entry of a log (raw: the receiver's
//  own input, DRV_BUFFER_RAW; else its records as DRV_BUFFER_RECORDS,
//  packed into self->packing unless packed is given).
void drv_dag_log_input(drv_dag_t *self, drv_node_t *node, drv_buffer_input_t *input, const msgpack_object *records,
                       size_t n, const void *packed, size_t size, const struct iovec *raw, int raw_count);
//  drv_node.c: true while an exporter fed with the others holds as much
//  as it may (the nodes take nothing more).
bool drv_dag_exporters_backlogged(drv_dag_t *self);

//  drv_dag_handover.c: a draining memory-buffered instance hands what its
//  failing exporters hold to the next; every running one takes such over.
//  hand_over tries (at most every 500 ms) once only failing exporters
//  hold anything; handover_feed claims and feeds (records fed); settled
//  lets the handover forget what is settled; timeout_ms says when to look
//  again (-1: not needed); close lets a claimed one go.
void drv_dag_handover_close(drv_dag_t *self);
int drv_dag_handover_feed(drv_dag_t *self);
void drv_dag_handover_settled(drv_dag_t *self, int64_t settled);
int64_t drv_dag_handover_timeout_ms(const drv_dag_t *self, int64_t now);

//  drv_dag_positions.c: each exporter's own position in the log (a disk
//  buffer's, or the memory log). open reads where each stood before a
//  restart; detach lets an exporter that holds as much as it may fall
//  behind (with a disk buffer: while another is still fed), and returns
//  true while the nodes must take nothing all the same; settled bounds
//  what the pipeline settled by where the exporters that fell behind
//  stand; tick enforces their queues' bounds in the log, lets the memory
//  log forget what nobody behind needs, and saves a disk buffer's
//  positions now and then; catch_up feeds those behind that may take more
//  (inputs fed).
void drv_dag_positions_open(drv_dag_t *self);
bool drv_dag_detach_laggards(drv_dag_t *self);
int64_t drv_dag_positions_settled(drv_dag_t *self, int64_t settled);
void drv_dag_positions_tick(drv_dag_t *self, int64_t now_ms);
int drv_dag_catch_up(drv_dag_t *self);
//  True when an exporter is behind (its position in the log is its own).
bool drv_dag_any_behind(const drv_dag_t *self);
//  Bytes the log holds from input number on (what one standing there has ahead of it).
int64_t drv_dag_log_bytes_from(drv_dag_t *self, int64_t number);
//  Without a disk buffer: an input about to run as number kept in the
//  memory log while an exporter is behind (raw, or its records, packed
//  already when packed is given). false when it cannot be kept (out of
//  memory): it must not run.
bool drv_dag_memory_keep(drv_dag_t *self, drv_node_t *node, int64_t number, const msgpack_object *records, size_t n,
                         const void *packed, size_t size, const struct iovec *raw, int raw_count);
//  An input of records taken at time_ms (wall) was fed to the exporters
//  that keep up: those behind have it ahead of them (their queue's figures).
void drv_dag_positions_passed(drv_dag_t *self, int64_t records, int64_t time_ms);
//  An exporter behind read again an input (of records, taken at time_ms).
void drv_dag_positions_read(drv_node_t *node, int64_t records, int64_t time_ms);
//  Falling behind, catching up: said at most every 5 s per exporter.
void drv_dag_positions_say(drv_node_t *node, const char *what);
//  drv_dag_counts.c (below drv_dag_positions.c): the counts saved with the positions taken back
//  (positions: the slot's file as loaded), and saved with them again.
void drv_dag_counts_restore(drv_dag_t *self, const json_t *positions);
json_t *drv_dag_counts_saved(const drv_dag_t *self, bool reported);
//  Marks the nodes each record's first copy reaches (drv_node_t's
//  first_copy), from the spec's nodes, once the graph is built.
void drv_dag_mark_first_copies(drv_dag_t *self, const json_t *nodes);
//  An exporter that fell behind and may take more (it reads again from its position).
bool drv_dag_lagging_may_read(const drv_node_t *node);

#endif
