/*  drv_gzip — gzip bodies in and out of the HTTP receivers and exporters
    (zlib). Inflating is bounded: a small body that would grow past the
    limit (a "zip bomb") is refused without inflating the rest. */
#ifndef DRV_GZIP_H
#define DRV_GZIP_H

#include <stddef.h>

typedef enum { DRV_GZIP_OK = 0, DRV_GZIP_MALFORMED, DRV_GZIP_TOO_LARGE } drv_gzip_result_t;

//  Inflates a gzip member (or several, concatenated) of size bytes into a
//  malloc'd *out of at most max bytes (NUL-terminated past *out_size).
drv_gzip_result_t drv_gzip_inflate(const void *data, size_t size, size_t max, char **out, size_t *out_size);

//  Deflates into a malloc'd gzip member. Returns 0, or -1 out of memory.
int drv_gzip_deflate(const void *data, size_t size, char **out, size_t *out_size);

#endif
