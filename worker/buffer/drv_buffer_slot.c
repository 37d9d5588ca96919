/*  drv_buffer_slot — a buffer slot's directory and its lock
    (drv_buffer_internal.h): below both the buffer that takes a slot and
    the adoption of the slots nobody holds. */
#include "drv_buffer_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int drv_buffer_lock(const char *dir, char *err, size_t errlen)
{
    if (err) {
        *err = 0;
    }
    //  The slot and its lock are opened without following a link, and the
    //  lock only when it is a regular file: a FIFO would block the open, a
    //  directory fail it on every start (docs/security.md).
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int fd = dir_fd >= 0 ? openat(dir_fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600) : -1;
    int saved = errno;
    struct stat st;
    const char *odd = dir_fd < 0 && (saved == ELOOP || saved == ENOTDIR)
                          ? "the slot is not a directory (a link is refused)"
                      : fd < 0 && (saved == ELOOP || saved == EISDIR)            ? "its lock is a link or a directory"
                      : fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) ? "its lock is not a regular file"
                                                                                 : NULL;
    if (dir_fd >= 0) {
        close(dir_fd);
    }
    if (odd || fd < 0) {
        if (err) {
            snprintf(err, errlen, "buffer slot %s refused: %s", dir, odd ? odd : strerror(saved));
        }
        if (fd >= 0) {
            close(fd);
        }
        return DRV_BUFFER_LOCK_REFUSED;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        return DRV_BUFFER_LOCK_HELD;
    }
    return fd;
}
