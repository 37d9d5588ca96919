/*  drv_msg — the control protocol between droverd, drover-broker and
    drover-worker, and the data-plane headers between broker and workers.
    schemas/control.md is the specification: every message is one msgpack map
    {v: 1, type: "<name>", ...fields}. Unknown keys are ignored (so fields can
    be added), a missing required field or a wrong type is malformed. */
#ifndef DRV_MSG_H
#define DRV_MSG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DRV_MSG_VERSION 1

//  The exit code of a worker that said INIT_FAILED (EX_CONFIG).
#define DRV_EXIT_INIT_FAILED 78

typedef enum {
    DRV_MSG_HELLO = 0,      // worker|broker -> droverd: I am up
    DRV_MSG_SPEC,           // droverd -> worker: what to run
    DRV_MSG_READY,          // worker -> droverd: every node initialised
    DRV_MSG_INIT_FAILED,    // worker -> droverd: a node cannot start (then exits DRV_EXIT_INIT_FAILED)
    DRV_MSG_HEARTBEAT,      // worker|broker -> droverd: alive, with counters
    DRV_MSG_DRAIN,          // droverd -> worker, or broker -> worker on the data path
    DRV_MSG_DRAINED,        // worker -> droverd: everything received is exported
    DRV_MSG_PIPELINE_SET,   // droverd -> broker: bind these receiver endpoints
    DRV_MSG_PIPELINE_DEL,   // droverd -> broker: close the front door, flush queued
    DRV_MSG_INSTANCE_ADD,   // droverd -> broker: route batches to this instance
    DRV_MSG_INSTANCE_DRAIN, // droverd -> broker: no more batches; send DRAIN marker
    DRV_MSG_INSTANCE_DEL,   // droverd -> broker: forget this instance
    DRV_MSG_BOUND,          // broker -> droverd: result of binding one endpoint
    DRV_MSG_CREDIT,         // worker -> broker: may send n more batches
    DRV_MSG_BATCH,          // broker -> worker: header frame; next frame is the payload
    DRV_MSG_SYNC,           // broker -> worker: reset credit (broker restarted)
    DRV_MSG_TAP,            // droverd -> worker: sample the records leaving these nodes (none: stop)
    DRV_MSG_TAPPED,         // worker -> droverd: sampled records
    DRV_MSG_RING,           // broker -> worker: the data ring has entries (the doorbell)
    DRV_MSG_TYPE_COUNT
} drv_msg_type_t;

//  Field indexes, for drv_msg_t.present.
typedef enum {
    DRV_F_ROLE = 0,
    DRV_F_INSTANCE,
    DRV_F_PIPELINE,
    DRV_F_NODE,
    DRV_F_ENDPOINT,
    DRV_F_REASON,
    DRV_F_DATA_ENDPOINT,
    DRV_F_PID,
    DRV_F_GENERATION,
    DRV_F_CORE,
    DRV_F_HEARTBEAT_MS,
    DRV_F_CREDIT_WINDOW,
    DRV_F_N,
    DRV_F_RECORDS_IN,
    DRV_F_RECORDS_OUT,
    DRV_F_ERRORS,
    DRV_F_BATCHES,
    DRV_F_OK,
    DRV_F_RESET,
    DRV_F_SPEC,
    DRV_F_RECEIVERS,
    DRV_F_SYNCED,
    DRV_F_NODES,
    DRV_F_BUFFER_DIR,
    DRV_F_BUFFER,
    DRV_F_ACKED,
    DRV_F_RING_FD,
    DRV_F_RING_BYTES,
    DRV_F_RUN_DIR,
    DRV_F_SYNC_ID,
    DRV_F_COUNT
} drv_msg_field_t;

typedef struct {
    drv_msg_type_t type;
    uint32_t present;    // bit per drv_msg_field_t set by decode (and by setters)
    char *role;          // "worker" | "broker"
    char *instance;      // "{group}/{pipeline}@{generation}#{core}"
    char *pipeline;      // "{group}:{pipeline}"
    char *node;          // node id within the pipeline
    char *endpoint;      // a zmq endpoint
    char *reason;        // human-readable failure
    char *data_endpoint; // the broker's backend, for workers to connect to
    int64_t pid;
    int64_t generation;
    int64_t core;
    int64_t heartbeat_ms;
    int64_t credit_window;
    int64_t n;
    int64_t records_in;
    int64_t records_out;
    int64_t errors;
    int64_t batches;
    bool ok;
    bool reset;
    bool synced;        // credit answering a SYNC: everything sent before the SYNC is acknowledged
    int64_t acked;      // CREDIT: batches settled (acknowledged), when present; n is then credit alone
    int64_t ring_fd;    // CREDIT with reset: the worker's data ring, its descriptor in process `pid`
    int64_t ring_bytes; // ... and its size (drover/drv_ring.h)
    int64_t sync_id;    // SYNC: its number; CREDIT with synced: the SYNC it answers
    json_t *spec;       // the normalized PipelineSpec (owned)
    json_t *receivers;  // [{node, endpoint}] (owned)
    json_t *nodes;      // per-node counters {"node": [in, out, dropped, errors]}; TAP: [node, ...];
                        // TAPPED: [[node, record as JSON text], ...] (owned)
    char *buffer_dir;   // SPEC: engine.buffer_dir, where disk buffers live
    char *run_dir;      // SPEC: engine.run_dir, where instances of one engine meet (locks)
    json_t *buffer;     // HEARTBEAT, DRAINED: the disk buffer's {bytes, records, oldest_age_ms,
                        // replayed, dropped, corrupt_segments, torn_bytes, full} (owned)
} drv_msg_t;

//  Starts an empty message of a type; free its contents with drv_msg_clear.
void drv_msg_init(drv_msg_t *msg, drv_msg_type_t type);
void drv_msg_clear(drv_msg_t *msg);

//  Setters mark the field present; strings are copied, json references taken.
void drv_msg_set_str(drv_msg_t *msg, drv_msg_field_t field, const char *value);
void drv_msg_set_int(drv_msg_t *msg, drv_msg_field_t field, int64_t value);
void drv_msg_set_bool(drv_msg_t *msg, drv_msg_field_t field, bool value);
void drv_msg_set_json(drv_msg_t *msg, drv_msg_field_t field, json_t *value);
bool drv_msg_has(const drv_msg_t *msg, drv_msg_field_t field);

//  Encodes; *data is malloc'd. Returns 0, or -1 when a required field is unset.
int drv_msg_encode(const drv_msg_t *msg, char **data, size_t *size);

//  Decodes into msg (which it initialises). Returns 0 ok, -2 malformed, with
//  the reason in err.
int drv_msg_decode(drv_msg_t *msg, const void *data, size_t size, char *err, size_t errlen);

const char *drv_msg_type_name(drv_msg_type_t type);

#endif
