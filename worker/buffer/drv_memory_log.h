/*  drv_memory_log — the inputs a memory-buffered instance keeps while one of
    its exporters is behind the others (docs/operations.md, "Exporter
    queues"): the same entries as a disk buffer's log (drv_buffer.h's
    drv_buffer_input_t: the receiver, the form, the bytes as taken), held
    in memory, oldest first, each once whatever the number of exporters
    behind. The DAG keeps an input here only while an exporter is behind,
    reads it again for that exporter alone when it can take more, and
    forgets it once no exporter behind stands at or before it. */
#ifndef DRV_MEMORY_LOG_H
#define DRV_MEMORY_LOG_H

#include "drv_buffer.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct drv_memory_log_t drv_memory_log_t;

drv_memory_log_t *drv_memory_log_new(void);
void drv_memory_log_destroy(drv_memory_log_t **self_p);

//  Keeps input (node, form, parts, records) as number, taken at time_ms
//  (wall); numbers only grow. 0, or -1 when out of memory (nothing kept).
int drv_memory_log_append(drv_memory_log_t *self, int64_t number, const drv_buffer_input_t *input, int64_t time_ms);
//  The oldest input numbered from or later: 1 with it in *input (node,
//  form, data, size, records, number, time_ms; valid until it is
//  forgotten), 0 when there is none.
int drv_memory_log_read(const drv_memory_log_t *self, int64_t from, drv_buffer_input_t *input);
//  Inputs numbered up to upto go.
void drv_memory_log_forget(drv_memory_log_t *self, int64_t upto);
bool drv_memory_log_empty(const drv_memory_log_t *self);

//  Bytes and records kept from number on: what an exporter standing there
//  has ahead of it.
int64_t drv_memory_log_bytes_from(const drv_memory_log_t *self, int64_t number);
int64_t drv_memory_log_records_from(const drv_memory_log_t *self, int64_t number);
//  The oldest input from from on such that what is kept from it on takes at
//  most max_bytes (past the newest when none fits), with the records of the
//  inputs passed over in *records_skipped.
int64_t drv_memory_log_fit_from(const drv_memory_log_t *self, int64_t from, int64_t max_bytes,
                                int64_t *records_skipped);
//  What it holds: bytes, records.
void drv_memory_log_size(const drv_memory_log_t *self, int64_t *bytes, int64_t *records);

#endif
