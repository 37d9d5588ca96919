/*  drv_s3_object — the bytes of one object exporter:s3 writes, made as its
    records come (docs/s3.md, "Uploads"): records encoded a run at a time
    (NDJSON lines; OTLP requests, whose concatenation is one request in
    protobuf and is joined into one in JSON) and compressed as one stream
    (gzip or zstd), so an object's first parts can be uploaded while it
    still fills and no whole object is ever held encoded. */
#ifndef DRV_S3_OBJECT_H
#define DRV_S3_OBJECT_H

#include "drv_buf.h"

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum { DRV_S3_NDJSON, DRV_S3_OTLP_JSON, DRV_S3_OTLP_PROTO } drv_s3_format_t;
typedef enum { DRV_S3_GZIP, DRV_S3_ZSTD, DRV_S3_NONE } drv_s3_compression_t;

typedef struct drv_s3_object_t drv_s3_object_t;

//  An object of format and compression; signal (drv_otlp_signal_t) says
//  which OTLP request the records make. NULL when memory ran out.
drv_s3_object_t *drv_s3_object_new(drv_s3_format_t format, drv_s3_compression_t compression, int signal);
void drv_s3_object_destroy(drv_s3_object_t **self_p);

//  Encodes n more records and appends what the compressor gives to out
//  (it may keep some back until more come or the object ends). 0, or -1
//  when memory ran out (the object is then unusable).
int drv_s3_object_add(drv_s3_object_t *self, const msgpack_object *records, size_t n, drv_buf_t *out);

//  Ends the object: the rest of its bytes appended to out. 0 or -1.
int drv_s3_object_finish(drv_s3_object_t *self, drv_buf_t *out);

#endif
