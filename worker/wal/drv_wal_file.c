/*  drv_wal_file — the log's files at the lowest level (drv_wal_internal.h):
    a segment opened relative to the log's directory, never through a link
    and only when it is a regular file; exact reads; the byte order of
    headers. Everything else in wal/ stands on this. */
#include "drv_wal_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

void (*drv_wal_crash_hook)(const char *step);

int drv_wal_open_segment(const drv_wal_t *self, const segment_t *segment, int flags)
{
    int fd = openat(self->dir_fd, segment->name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

int drv_wal_pread(int fd, void *buf, size_t len, int64_t offset)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(offset + (int64_t)got));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return -1;
        }
        if (n == 0) {
            return 0;
        }
        got += (size_t)n;
    }
    return 1;
}

void drv_wal_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

void drv_wal_put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}
