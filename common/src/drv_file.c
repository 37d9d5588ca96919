/*  drv_file — reading a whole file of bounded size. */
#include "drover/drv_file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *drv_file_read(const char *path, size_t max, size_t *size, char *err, size_t errlen)
{
    FILE *file = fopen(path, "rb");
    if (!file) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    char *text = malloc(max + 1);
    size_t n = fread(text, 1, max + 1, file);
    bool read_error = ferror(file);
    fclose(file);
    if (read_error || n > max) {
        if (read_error) {
            snprintf(err, errlen, "%s: read error", path);
        } else {
            snprintf(err, errlen, "%s: larger than %zu bytes", path, max);
        }
        free(text);
        return NULL;
    }
    text[n] = 0;
    *size = n;
    return text;
}

int drv_file_write_all(int fd, const void *data, size_t len)
{
    const char *bytes = data;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, bytes + done, len - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            errno = n == 0 ? ENOSPC : errno;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}
