/*  drv_file — reading a whole file of bounded size, writing one, making directories. */
#include "drover/drv_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

//  path opened non-blocking, when it is a regular file; -1 with err set.
static int s_open_regular(const char *path, struct stat *st, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        snprintf(err, errlen, "%s: not a regular file (a FIFO or a device could block)", path);
        close(fd);
        return -1;
    }
    return fd;
}

int drv_file_check_readable(const char *path, char *err, size_t errlen)
{
    struct stat st;
    int fd = s_open_regular(path, &st, err, errlen);
    if (fd < 0) {
        return -1;
    }
    close(fd);
    return 0;
}

char *drv_file_read(const char *path, size_t max, size_t *size, char *err, size_t errlen)
{
    struct stat st;
    int fd = s_open_regular(path, &st, err, errlen);
    if (fd < 0) {
        return NULL;
    }
    if ((uint64_t)st.st_size > max) {
        snprintf(err, errlen, "%s: larger than %zu bytes", path, max);
        close(fd);
        return NULL;
    }
    char *text = malloc(max + 1);
    size_t n = 0;
    bool read_error = false;
    while (n <= max) {
        ssize_t got = read(fd, text + n, max + 1 - n);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            read_error = got < 0;
            break;
        }
        n += (size_t)got;
    }
    close(fd);
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

int drv_file_mkdirs(const char *path, char *err, size_t errlen)
{
    char partial[4096];
    snprintf(partial, sizeof partial, "%s", path);
    for (char *p = partial + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(partial, 0700) != 0 && errno != EEXIST) {
                snprintf(err, errlen, "cannot create %s: %s", partial, strerror(errno));
                return -1;
            }
            *p = c;
            if (!c) {
                return 0;
            }
        }
    }
}

bool drv_file_names(const char *path, int fd)
{
    struct stat held, named;
    return fd >= 0 && fstat(fd, &held) == 0 && stat(path, &named) == 0 && held.st_ino == named.st_ino &&
           held.st_dev == named.st_dev;
}

//  A file nobody holds is removed only once this old: a live holder made
//  by drv_file_lock_in is never found unheld, but a joining file is for a
//  moment, and so is a member file an older drover made before locking it
//  (an upgrade's old generation). docs/operations.md, "Upgrading drover".
#define UNHELD_STALE_S 60

int drv_file_sweep_unheld(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return saved == EWOULDBLOCK ? 1 : -1;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_mtime < time(NULL) - UNHELD_STALE_S && drv_file_names(path, fd)) {
        unlink(path);
    }
    close(fd);
    return 0;
}

//  Joining files a process left when it died between making one and
//  renaming it.
static void s_sweep_joining(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        return;
    }
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        if (strncmp(entry->d_name, "joining.", 8) == 0) {
            char path[4400];
            snprintf(path, sizeof path, "%s/%s", dir, entry->d_name);
            drv_file_sweep_unheld(path);
        }
    }
    closedir(d);
}

int drv_file_lock_in(const char *dir, const char *name)
{
    static unsigned serial;
    s_sweep_joining(dir);
    char temp[4400], path[4400];
    //  pid and a serial: unique among this namespace's processes; the time
    //  tells apart a pid reused in another namespace sharing dir.
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(temp, sizeof temp, "%s/joining.%ld.%u.%lld%09ld", dir, (long)getpid(), serial++, (long long)ts.tv_sec,
             ts.tv_nsec);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    //  Held while ours replaces it: a live holder's is not replaced.
    int before = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (before >= 0 && flock(before, LOCK_EX | LOCK_NB) != 0) {
        close(before);
        errno = EWOULDBLOCK;
        return -1;
    }
    int fd = open(temp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0 && (flock(fd, LOCK_EX | LOCK_NB) != 0 || rename(temp, path) != 0)) {
        int saved = errno;
        unlink(temp); // ours alone (O_EXCL): nothing is left beside
        close(fd);
        errno = saved;
        fd = -1;
    }
    if (before >= 0) {
        close(before);
    }
    return fd;
}
