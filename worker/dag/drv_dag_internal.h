/*  drv_dag_internal — the DAG's state, shared by the files of dag/, each
    calling only those below it: drv_node.c (what the DAG offers the node
    kinds), drv_dag_buffered.c (the disk buffer inputs wait in),
    drv_dag_input.c (records entering the DAG), drv_dag.c (building it,
    driving it, settling). drv_tap.c and drv_condition.c sit beside. */
#ifndef DRV_DAG_INTERNAL_H
#define DRV_DAG_INTERNAL_H

#include "drv_buf.h"
#include "drv_buffer.h"
#include "drv_dag.h"
#include "drv_node.h"

#include <czmq.h>
#include <msgpack.h>

struct drv_dag_t {
    drv_node_t *nodes; // count nodes, in spec order
    size_t count;
    drv_dag_identity_t who;  // which instance (strings owned)
    msgpack_zone spec_zone;  // config values as msgpack objects, for the DAG's life
    zlist_t *spec_buffers;   // encoded config bytes that spec_zone objects point into
    msgpack_zone batch_zone; // records of the batch in flight; cleared per batch
    drv_buf_t out;           // exporter encoding buffer, reused
    int64_t unowned_errors;  // batches for a receiver the DAG does not have (the rest are the nodes')
    int64_t input;           // the last input taken (drv_node_taken)
    int64_t running;         // the input being run (drv_node_input): the last fed to the nodes
    int64_t settled;         // inputs up to this one are settled, receivers told
    //  A disk buffer (policies.buffer type: disk, drv_dag_buffered.c), or
    //  NULL: inputs are numbered by its log and wait in it, in order, until
    //  the nodes can take them.
    drv_buffer_t *buffer;
    int64_t told_durable;    // receivers answering once durable were told up to this
    msgpack_sbuffer packing; // records packed for the log
    int64_t tap_per_sec;     // samples per second and tapped node (drv_tap.c)
    json_t *tap_samples;     // [[node, JSON text], ...] not sent yet, or NULL
    drv_buf_t tap_buf;       // rendering a sample
};

//  drv_dag_buffered.c: opening the buffer (0, or -1 with err), taking
//  records into it (false: full, nothing taken), feeding what waits.
int drv_dag_buffer_open(drv_dag_t *self, const json_t *spec, char *err, size_t errlen);
//  raw: the receiver's own input (DRV_BUFFER_RAW, read back by its replay
//  hook), or NULL: records packed (DRV_BUFFER_RECORDS; packed already
//  when packed is given).
bool drv_dag_buffer_take(drv_node_t *node, const msgpack_object *records, size_t n, const void *packed, size_t size,
                         const struct iovec *raw, int raw_count);
//  drv_node.c: true while an exporter holds as much as it may (the nodes
//  take nothing more).
bool drv_dag_exporters_backlogged(drv_dag_t *self);

#endif
