/*  drv_gzip — see drv_gzip.h. */
#include "drv_gzip.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define GZIP_WINDOW (15 + 16) // windowBits for a gzip wrapper

drv_gzip_result_t drv_gzip_inflate(const void *data, size_t size, size_t max, char **out, size_t *out_size)
{
    *out = NULL;
    *out_size = 0;
    z_stream z = {0};
    if (inflateInit2(&z, GZIP_WINDOW) != Z_OK) {
        return DRV_GZIP_MALFORMED;
    }
    size_t cap = size * 4 < 4096 ? 4096 : size * 4;
    cap = cap > max + 1 ? max + 1 : cap;
    char *buf = malloc(cap + 1);
    size_t len = 0;
    drv_gzip_result_t result = DRV_GZIP_OK;
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)size;
    while (buf) {
        if (len == cap) {
            if (cap > max) {
                result = DRV_GZIP_TOO_LARGE; // one byte past the limit is enough to know
                break;
            }
            size_t grown = cap * 2 > max + 1 ? max + 1 : cap * 2;
            char *bigger = realloc(buf, grown + 1);
            if (!bigger) {
                result = DRV_GZIP_TOO_LARGE;
                break;
            }
            buf = bigger;
            cap = grown;
        }
        z.next_out = (Bytef *)buf + len;
        z.avail_out = (uInt)(cap - len);
        int rc = inflate(&z, Z_NO_FLUSH);
        len = cap - z.avail_out;
        if (rc == Z_STREAM_END) {
            if (z.avail_in == 0) {
                break;
            }
            inflateReset(&z); // another member follows
            continue;
        }
        if (rc == Z_BUF_ERROR && z.avail_in == 0) {
            result = DRV_GZIP_MALFORMED; // truncated
            break;
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            result = DRV_GZIP_MALFORMED;
            break;
        }
    }
    inflateEnd(&z);
    if (result == DRV_GZIP_OK && (!buf || len > max)) {
        result = DRV_GZIP_TOO_LARGE; // past the limit, or no memory for it
    }
    if (result != DRV_GZIP_OK) {
        free(buf);
        return result;
    }
    buf[len] = 0;
    *out = buf;
    *out_size = len;
    return DRV_GZIP_OK;
}

int drv_gzip_deflate(const void *data, size_t size, char **out, size_t *out_size)
{
    *out = NULL;
    *out_size = 0;
    z_stream z = {0};
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, GZIP_WINDOW, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        return -1;
    }
    size_t cap = deflateBound(&z, (uLong)size);
    char *buf = malloc(cap);
    if (!buf) {
        deflateEnd(&z);
        return -1;
    }
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)size;
    z.next_out = (Bytef *)buf;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    *out_size = cap - z.avail_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(buf);
        return -1;
    }
    *out = buf;
    return 0;
}
