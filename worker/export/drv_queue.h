/*  drv_queue — an exporter's queue (`queue: {max_bytes, when_full}`,
    docs/operations.md "Exporter queues"): how many bytes of what it has not
    delivered it may hold, and what happens when that is reached. `block`:
    the exporter is backlogged and the pipeline pushes back, as without a
    queue; `drop_oldest`: it drops its oldest held records, counted and
    logged (at most once a second), and nothing else notices. Either way,
    while the queue has room the other exporters go on at full speed. */
#ifndef DRV_QUEUE_H
#define DRV_QUEUE_H

#include "drv_node.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int64_t max_bytes;
    int64_t max_batches; // 0: no such bound (DRV_QUEUE_BUFFERED_BATCHES)
    bool drop_oldest;
    int64_t next_log_ms; // mono: drops are logged at most once a second
} drv_queue_t;

//  The log holds the backlog (a disk buffer's, or the memory log where
//  inputs are kept once, as they came): an exporter holds this many
//  batches at most (and no more than half its max_bytes), and its queue's
//  max_bytes and when_full apply to how far behind the others it may fall
//  in the log (docs/operations.md, "Exporter queues").
#define DRV_QUEUE_BUFFERED_BATCHES 16

//  From the normalized config's `queue` (absent: fallback_bytes; block).
void drv_queue_init(drv_queue_t *self, drv_node_t *node, const json_t *config, int64_t fallback_bytes);
//  True when holding bytes in batches leaves the pipeline to push back (block, full).
bool drv_queue_full(const drv_queue_t *self, int64_t bytes, int64_t batches);
//  True when holding bytes means dropping the oldest (drop_oldest, past max).
bool drv_queue_over(const drv_queue_t *self, int64_t bytes);
//  records of the oldest were dropped to make room: counted in the node's
//  queue_dropped, and said in the log at most once a second.
void drv_queue_dropped(drv_queue_t *self, drv_node_t *node, size_t records);

#endif
