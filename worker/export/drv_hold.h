/*  drv_hold — what an exporter whose output did not take a batch holds: the
    batches' bytes in order, each with the input it came in, retried on a
    timer (doubling from first_ms to max_ms) that the worker polls through
    the node's fd. The one way an exporter that writes locally (a file, a
    zmq socket) waits without blocking the instance's loop: while anything
    is held the node reports it (holding), so its input is not settled and
    nothing is acknowledged upstream before it is out. */
#ifndef DRV_HOLD_H
#define DRV_HOLD_H

#include "drv_node.h"
#include "drv_queue.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Hands len bytes to the output without blocking. Returns the bytes taken
//  (0 to len; fewer: the rest waits, *why says why), or -1 when the batch
//  can never be taken (it is then dropped and counted as errors).
typedef ssize_t(drv_hold_out_fn)(void *arg, const char *data, size_t len, const char **why);

typedef struct {
    drv_hold_out_fn *out;
    void *arg;
    int64_t first_ms, max_ms; // the retry backoff
    bool waits_are_errors;    // a batch that has to wait counts its records as errors (once)
    const json_t *config;     // the node's normalized config: its `queue` (drv_queue.h)
    int64_t queue_bytes;      // queue.max_bytes when not given
} drv_hold_config_t;

typedef struct drv_hold_t drv_hold_t;

//  For node (its queue: drv_queue.h); NULL with the reason in err (no timer).
drv_hold_t *drv_hold_new(drv_node_t *node, const drv_hold_config_t *config, char *err, size_t errlen);
//  Frees what is held: it was never settled, so upstream still has it.
void drv_hold_destroy(drv_hold_t **self_p);

//  A batch of n records encoded in data: out at once when nothing is held
//  (counted out), else held behind what is.
void drv_hold_put(drv_hold_t *self, drv_node_t *node, size_t n, const char *data, size_t len);
//  The node hooks of an exporter whose state starts with its drv_hold_t *
//  (exporter:file, exporter:zmq): the timer while something is held (-1:
//  none); the retry when it fired; the oldest input held (-1: none); its
//  queue full (when_full: block); what its queue holds.
int drv_hold_node_fd(drv_node_t *node);
int drv_hold_node_readable(drv_node_t *node);
int64_t drv_hold_node_holding(drv_node_t *node);
bool drv_hold_node_backlogged(drv_node_t *node);
//  The records held (walks the held batches: at most the backlog bounds).
int64_t drv_hold_node_backlog(drv_node_t *node);
void drv_hold_node_queue(drv_node_t *node, int64_t *bytes, int64_t *oldest_ms);

#endif
