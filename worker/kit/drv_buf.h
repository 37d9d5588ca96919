/*  drv_buf — a growable byte buffer, reused across batches so that encoding
    output does not allocate once it has reached its working size. */
#ifndef DRV_BUF_H
#define DRV_BUF_H

#include <stddef.h>

typedef struct {
    char *data; // capacity bytes, len used
    size_t len;
    size_t capacity;
} drv_buf_t;

int drv_buf_reserve(drv_buf_t *buf, size_t extra);
int drv_buf_append(drv_buf_t *buf, const void *data, size_t size);
//  One byte (inline: JSON writers put many).
static inline int drv_buf_putc(drv_buf_t *buf, char c)
{
    if (buf->len == buf->capacity && drv_buf_reserve(buf, 1) != 0) {
        return -1;
    }
    buf->data[buf->len++] = c;
    return 0;
}
void drv_buf_reset(drv_buf_t *buf);
void drv_buf_free(drv_buf_t *buf);

//  msgpack_packer write callback over a drv_buf_t.
int drv_buf_msgpack_write(void *buf, const char *data, size_t size);

#endif
