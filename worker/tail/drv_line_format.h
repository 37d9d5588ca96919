/*  drv_line_format — what the lines of container logs say (receiver:file's
    formats, docs/operations.md "Reading files"): a CRI line's parts, an
    RFC 3339 time in nanoseconds, and the pod a kubelet log path names. */
#ifndef DRV_LINE_FORMAT_H
#define DRV_LINE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  A CRI log line, `TIME STREAM TAG MESSAGE` (TAG: P partial, F full).
typedef struct {
    int64_t time_ns;
    const char *stream, *message; // into the line
    size_t stream_len, message_len;
    bool partial;
} drv_cri_line_t;

//  false when line is not one.
bool drv_cri_parse(const char *line, size_t len, drv_cri_line_t *out);
//  An RFC 3339 time (`2026-11-26T10:00:00.123456789Z`, or with an offset)
//  as nanoseconds since the epoch, or -1.
int64_t drv_rfc3339_ns(const char *text, size_t len);

//  The pod of a kubelet log path, .../NAMESPACE_POD_UID/CONTAINER/N.log
//  (or rotated, N.log.<time>).
typedef struct {
    char namespace_[256], pod[256], uid[64], container[256];
    int64_t restart_count;
} drv_kube_path_t;

//  false when path is not laid out so.
bool drv_kube_path(const char *path, drv_kube_path_t *out);

#endif
