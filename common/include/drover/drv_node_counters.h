/*  drv_node_counters — a node's counters in a heartbeat (`nodes` in
    schemas/control.md): an array whose positions are named here, written
    by the worker (worker/dag/drv_dag.c) and read by droverd by these names
    only. Every node has the first DRV_NODE_COUNTERS; an exporter goes on
    to DRV_EXPORTER_COUNTERS; a node that tells more of itself (receiver:kafka's
    partitions) adds an object; a node that timed its work ends with its
    histogram (drv_histo_json), after whichever it has. */
#ifndef DRV_NODE_COUNTERS_H
#define DRV_NODE_COUNTERS_H

#include <jansson.h>
#include <stdbool.h>

typedef enum {
    DRV_NC_IN,      // records given to the node (a receiver: read)
    DRV_NC_OUT,     // records it handed on (an exporter: delivered)
    DRV_NC_DROPPED, // records it dropped on purpose (a filter, a policy)
    DRV_NC_ERRORS,  // records given up
    DRV_NODE_COUNTERS,
    //  An exporter's delivery.
    DRV_NC_RETRIES = DRV_NODE_COUNTERS, // attempts to be made again
    DRV_NC_BACKLOG,                     // records held, not yet delivered
    DRV_NC_FAILING_MS,                  // how long nothing was delivered since an attempt failed, or it was backlogged
    DRV_NC_LAST_ERROR,                  // the last failure's text ("" when none)
    DRV_NC_FAILURE_AGE_MS,              // how long ago the last attempt failed (-1: never)
    DRV_NC_QUEUE_BYTES,                 // what its queue holds (DRV_NC_BACKLOG: its records)
    DRV_NC_QUEUE_AGE_MS,                // how long ago the oldest of it was taken (0: empty)
    DRV_NC_QUEUE_DROPPED,               // records dropped because the queue was full (when_full: drop_oldest)
    DRV_NC_RECOVERED_AGE_MS,            // how long ago it delivered again after failing (-1: never)
    DRV_EXPORTER_COUNTERS,
} drv_node_counter_t;

//  One counter of a node's array (0 when it has none at that position).
static inline json_int_t drv_node_counter(const json_t *counters, drv_node_counter_t which)
{
    return json_integer_value(json_array_get(counters, which));
}

//  True when the array carries an exporter's delivery counters (a worker
//  of an earlier drover, still running through an upgrade, stops before
//  DRV_NC_RECOVERED_AGE_MS).
static inline bool drv_node_counters_exporter(const json_t *counters)
{
    return json_array_size(counters) > DRV_NC_QUEUE_DROPPED &&
           json_is_integer(json_array_get(counters, DRV_NC_QUEUE_DROPPED));
}

//  A counter an earlier worker may not send: fallback when it is not there.
static inline json_int_t drv_node_counter_or(const json_t *counters, drv_node_counter_t which, json_int_t fallback)
{
    const json_t *value = json_array_get(counters, which);
    return json_is_integer(value) ? json_integer_value(value) : fallback;
}

//  What the node tells of itself beyond its counters (an object whose keys
//  join its status: "partitions" of receiver:kafka), or NULL.
static inline json_t *drv_node_counters_details(const json_t *counters)
{
    for (size_t i = DRV_NODE_COUNTERS; i < json_array_size(counters); i++) {
        if (json_is_object(json_array_get(counters, i))) {
            return json_array_get(counters, i);
        }
    }
    return NULL;
}

//  The node's histogram, or NULL when it timed nothing.
static inline json_t *drv_node_counters_histogram(const json_t *counters)
{
    size_t size = json_array_size(counters);
    json_t *last = size > DRV_NODE_COUNTERS ? json_array_get(counters, size - 1) : NULL;
    return json_is_array(last) ? last : NULL;
}

#endif
