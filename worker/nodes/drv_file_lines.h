/*  drv_file_lines — what receiver:file makes of a file's lines (docs/operations.md,
    "Reading files"): each line as its format reads it (text, cri, docker,
    ndjson), partial lines joined, messages joined by multiline, and each
    as a record with the file's attributes and, with kubernetes, the pod's
    resource. What is still open at the end of the lines given (a partial
    line, a message) is left for the next call unless told it is whole,
    or cut. A message is joined up to max_line_bytes: longer, it is cut
    there; cut while still open (it outgrew what a file's buffer holds),
    the rest of it is dropped as it comes (docs/security.md). */
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
//  What is open at the end of the lines given: left for the next call,
//  whole (nothing more can come), or cut (no more of it can be held).
typedef enum { DRV_FILE_LINES_OPEN, DRV_FILE_LINES_WHOLE, DRV_FILE_LINES_CUT } drv_file_lines_close_t;

//  Where a file stands between calls (the caller keeps one per file,
//  zeroed at first): the rest of a message cut is being dropped.
typedef struct {
    bool dropping; // the rest of a message cut: its pieces, then (multiline) lines until one starts a message
    bool in_entry; // the last piece dropped was partial: the next one goes on with it
} drv_file_lines_file_t;

//  What a call made of the lines.
typedef struct {
    size_t records;              // made
    int64_t end;                 // where the last whole record ends (-1: none)
    int64_t dropped;             // where the rest of a message cut, dropped first, ends (-1: none)
    size_t cut;                  // records cut at max_line_bytes
    drv_file_lines_file_t where; // the file's state once what was made is taken (or dropped)
} drv_file_lines_made_t;

//  n of file's lines (at most DRV_FILE_LINES_MAX) as records in the batch
//  zone. kube: the pod its path names, or NULL. The records point into
//  the lines and into documents kept until drv_file_lines_done.
#define DRV_FILE_LINES_MAX 1000
drv_file_lines_made_t drv_file_lines_records(drv_file_lines_t *self, drv_node_t *node, const drv_tail_file_t *file,
                                             const drv_file_lines_file_t *where, const drv_kube_path_t *kube,
                                             const drv_tail_line_t *lines, size_t n, drv_file_lines_close_t close,
                                             msgpack_object *records);
//  The records made were taken: what they pointed into goes.
void drv_file_lines_done(drv_file_lines_t *self);

#endif
