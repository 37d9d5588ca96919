/*  drv_s3_object — see drv_s3_object.h. */
#include "drv_s3_object.h"
#include "drv_ndjson.h"
#include "drv_otlp_build.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#define GZIP_WINDOW (15 + 16) // zlib's window bits for a gzip wrapper
#define ZSTD_LEVEL 3

struct drv_s3_object_t {
    drv_s3_format_t format;
    drv_s3_compression_t compression;
    drv_otlp_signal_t signal;
    bool json_begun; // OTLP/JSON: the request's opening is written
    bool json_items; // ...and a resource in it
    z_stream z;
    bool z_ready;
    ZSTD_CCtx *zstd;
    drv_buf_t raw; // a run of records encoded, before compression
};

drv_s3_object_t *drv_s3_object_new(drv_s3_format_t format, drv_s3_compression_t compression, int signal)
{
    drv_s3_object_t *self = calloc(1, sizeof *self);
    if (!self) {
        return NULL;
    }
    *self = (drv_s3_object_t){.format = format, .compression = compression, .signal = (drv_otlp_signal_t)signal};
    bool ready = true;
    if (compression == DRV_S3_GZIP) {
        ready = self->z_ready =
            deflateInit2(&self->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, GZIP_WINDOW, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    } else if (compression == DRV_S3_ZSTD) {
        self->zstd = ZSTD_createCCtx();
        ready = self->zstd && !ZSTD_isError(ZSTD_CCtx_setParameter(self->zstd, ZSTD_c_compressionLevel, ZSTD_LEVEL));
    }
    if (!ready) {
        drv_s3_object_destroy(&self);
    }
    return self;
}

void drv_s3_object_destroy(drv_s3_object_t **self_p)
{
    drv_s3_object_t *self = *self_p;
    if (!self) {
        return;
    }
    if (self->z_ready) {
        deflateEnd(&self->z);
    }
    ZSTD_freeCCtx(self->zstd);
    drv_buf_free(&self->raw);
    free(self);
    *self_p = NULL;
}

//  raw through the compressor into out; end: the stream's last bytes too.
static int s_compress(drv_s3_object_t *self, const char *raw, size_t len, bool end, drv_buf_t *out)
{
    if (self->compression == DRV_S3_NONE) {
        return drv_buf_append(out, raw, len);
    }
    if (self->compression == DRV_S3_GZIP) {
        self->z.next_in = (Bytef *)raw;
        self->z.avail_in = (uInt)len;
        int rc;
        do {
            if (drv_buf_reserve(out, 64 * 1024) != 0) {
                return -1;
            }
            self->z.next_out = (Bytef *)out->data + out->len;
            self->z.avail_out = (uInt)(out->capacity - out->len);
            size_t before = self->z.avail_out;
            rc = deflate(&self->z, end ? Z_FINISH : Z_NO_FLUSH);
            out->len += before - self->z.avail_out;
            if (rc == Z_STREAM_ERROR) {
                return -1;
            }
        } while (self->z.avail_in > 0 || self->z.avail_out == 0 || (end && rc != Z_STREAM_END));
        return 0;
    }
    ZSTD_inBuffer in = {raw, len, 0};
    size_t left;
    do {
        if (drv_buf_reserve(out, ZSTD_CStreamOutSize()) != 0) {
            return -1;
        }
        ZSTD_outBuffer o = {out->data + out->len, out->capacity - out->len, 0};
        left = ZSTD_compressStream2(self->zstd, &o, &in, end ? ZSTD_e_end : ZSTD_e_continue);
        out->len += o.pos;
        if (ZSTD_isError(left)) {
            return -1;
        }
    } while (in.pos < in.size || (end && left > 0));
    return 0;
}

//  OTLP/JSON: one request per run, joined into one ({"resourceLogs":[A, B,
//  ...]}): the first run's opening kept, each run's resources appended.
static int s_json_join(drv_s3_object_t *self, drv_buf_t *run)
{
    char *open = memchr(run->data, '[', run->len);
    if (!open || run->len < 2 || memcmp(run->data + run->len - 2, "]}", 2) != 0) {
        return -1;
    }
    size_t head = (size_t)(open + 1 - run->data), items = run->len - 2 - head;
    drv_buf_t joined = {0};
    int rc = 0;
    if (!self->json_begun) {
        rc = drv_buf_append(&joined, run->data, head);
        self->json_begun = true;
    }
    if (rc == 0 && items > 0) {
        rc = self->json_items ? drv_buf_append(&joined, ",", 1) : 0;
        rc = rc ? rc : drv_buf_append(&joined, open + 1, items);
        self->json_items = true;
    }
    drv_buf_free(run);
    *run = joined;
    return rc;
}

int drv_s3_object_add(drv_s3_object_t *self, const msgpack_object *records, size_t n, drv_buf_t *out)
{
    if (n == 0) {
        return 0;
    }
    drv_buf_t *raw = &self->raw;
    raw->len = 0;
    int rc = 0;
    if (self->format == DRV_S3_NDJSON) {
        for (size_t i = 0; i < n && rc == 0; i++) {
            rc = drv_ndjson_append(raw, &records[i]);
        }
    } else {
        rc = drv_otlp_encode(self->signal, self->format == DRV_S3_OTLP_JSON, records, n, raw);
        rc = rc == 0 && self->format == DRV_S3_OTLP_JSON ? s_json_join(self, raw) : rc;
    }
    return rc ? rc : s_compress(self, raw->data, raw->len, false, out);
}

int drv_s3_object_finish(drv_s3_object_t *self, drv_buf_t *out)
{
    static const char *const opening[] = {"{\"resourceLogs\":[", "{\"resourceSpans\":[", "{\"resourceMetrics\":["};
    drv_buf_t *raw = &self->raw;
    raw->len = 0;
    int rc = 0;
    if (self->format == DRV_S3_OTLP_JSON) {
        const char *first = opening[self->signal];
        rc = self->json_begun ? 0 : drv_buf_append(raw, first, strlen(first));
        rc = rc ? rc : drv_buf_append(raw, "]}", 2);
    }
    return rc ? rc : s_compress(self, raw->data, raw->len, true, out);
}
