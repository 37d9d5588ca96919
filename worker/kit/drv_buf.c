/*  drv_buf — growable byte buffer. */
#include "drv_buf.h"

#include <stdlib.h>
#include <string.h>

int drv_buf_reserve(drv_buf_t *buf, size_t extra)
{
    if (buf->len + extra <= buf->capacity) {
        return 0;
    }
    size_t capacity = buf->capacity ? buf->capacity : 4096;
    while (capacity < buf->len + extra) {
        capacity *= 2;
    }
    char *data = realloc(buf->data, capacity);
    if (!data) {
        return -1;
    }
    buf->data = data;
    buf->capacity = capacity;
    return 0;
}

int drv_buf_append(drv_buf_t *buf, const void *data, size_t size)
{
    if (size == 0) {
        return 0; // data may be NULL (msgpack-c's empty strings)
    }
    if (drv_buf_reserve(buf, size) != 0) {
        return -1;
    }
    memcpy(buf->data + buf->len, data, size);
    buf->len += size;
    return 0;
}

void drv_buf_reset(drv_buf_t *buf)
{
    buf->len = 0;
}

void drv_buf_free(drv_buf_t *buf)
{
    free(buf->data);
    buf->data = NULL;
    buf->len = buf->capacity = 0;
}

int drv_buf_msgpack_write(void *buf, const char *data, size_t size)
{
    return drv_buf_append(buf, data, size);
}
