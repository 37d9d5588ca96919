/*  drv_file_lines — what receiver:file makes of a file's lines (docs/operations.md,
    "Reading files"): each line as its format reads it (text, cri, docker,
    ndjson), partial lines joined, messages joined by multiline, and each
    as a record with the file's attributes and, with kubernetes, the pod's
    resource. What is still open at the end of the lines given (a partial
    line, a message) is left for the next call unless told it is whole. */
#ifndef DRV_FILE_LINES_H
#define DRV_FILE_LINES_H

#include "drv_line_format.h"
#include "drv_node.h"
#include "drv_tail.h"

#include <jansson.h>

typedef struct drv_file_lines_t drv_file_lines_t;

//  From receiver:file's normalized config (format, multiline, kubernetes): NULL with err.
drv_file_lines_t *drv_file_lines_new(const json_t *config, char *err, size_t errlen);
void drv_file_lines_destroy(drv_file_lines_t **self_p);
//  How long a message open at a file's end waits for more (max_wait_ms).
int64_t drv_file_lines_wait_ms(const drv_file_lines_t *self);
//  n of file's lines (at most DRV_FILE_LINES_MAX) as records in the batch
//  zone: how many, with in *end where the last whole one ends (-1: none).
//  all: what is open at the end is whole. kube: the pod its path names, or
//  NULL. The records point into the lines and into documents kept until
//  drv_file_lines_done.
#define DRV_FILE_LINES_MAX 1000
size_t drv_file_lines_records(drv_file_lines_t *self, drv_node_t *node, const drv_tail_file_t *file,
                              const drv_kube_path_t *kube, const drv_tail_line_t *lines, size_t n, bool all,
                              msgpack_object *records, int64_t *end);
//  The records made were taken: what they pointed into goes.
void drv_file_lines_done(drv_file_lines_t *self);

#endif
