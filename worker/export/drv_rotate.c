/*  drv_rotate — see drv_rotate.h. */
#include "drv_rotate.h"

#include "drover/drv_log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define STAMP_LEN 19 // 20261129T014609.123

drv_rotate_t drv_rotate_config(const json_t *config)
{
    json_t *rotate = json_object_get(config, "rotate");
    drv_rotate_t out = {.max_files = DRV_ROTATE_DEFAULT_FILES};
    if (json_is_object(rotate)) {
        out.max_bytes = json_integer_value(json_object_get(rotate, "max_bytes"));
        json_t *files = json_object_get(rotate, "max_files");
        out.max_files = files ? json_integer_value(files) : out.max_files;
        out.compress = json_is_true(json_object_get(rotate, "compress"));
    }
    return out;
}

//  ---------------------------------------------------------------- compressing

//  aside gzipped to aside.gz, then removed. The .gz is written unnamed
//  (O_TMPFILE) and linked in once whole: a compression cut short (the
//  instance ended) leaves nothing behind but aside, which the next rotation
//  compresses. Another instance compressing the same file first is no
//  failure (its .gz exists: linkat says EEXIST; aside gone: ENOENT).
static void *s_compress(void *arg)
{
    char *aside = arg;
    char dir[PATH_MAX], done[PATH_MAX + 16], proc[64];
    snprintf(done, sizeof done, "%s.gz", aside);
    snprintf(dir, sizeof dir, "%s", aside);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
    }
    int in = open(aside, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    int tmp = in >= 0 ? open(slash ? (dir[0] ? dir : "/") : ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644) : -1;
    int gz_fd = tmp >= 0 ? dup(tmp) : -1;
    gzFile out = gz_fd >= 0 ? gzdopen(gz_fd, "wb6") : NULL;
    if (!out && gz_fd >= 0) {
        close(gz_fd);
    }
    bool ok = out != NULL;
    char chunk[65536];
    ssize_t got = 0;
    while (ok && (got = read(in, chunk, sizeof chunk)) > 0) {
        ok = gzwrite(out, chunk, (unsigned)got) == (int)got;
    }
    ok = ok && got == 0;
    if (out && gzclose(out) != Z_OK) {
        ok = false;
    }
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", tmp);
    ok = ok && (linkat(AT_FDCWD, proc, AT_FDCWD, done, AT_SYMLINK_FOLLOW) == 0 || errno == EEXIST);
    if (ok) {
        unlink(aside);
    } else if (in >= 0 || errno != ENOENT) {
        drv_warn("file not compressed aside=%s reason=\"%s\": left as it is", aside, strerror(errno));
    }
    if (tmp >= 0) {
        close(tmp);
    }
    if (in >= 0) {
        close(in);
    }
    free(aside);
    return NULL;
}

static void s_compress_later(const char *aside)
{
    char *copy = strdup(aside);
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (!copy || pthread_create(&thread, &attr, s_compress, copy) != 0) {
        free(copy); // left uncompressed
    }
    pthread_attr_destroy(&attr);
}

//  ---------------------------------------------------------------- pruning

//  name is base.STAMP or base.STAMP.gz: the stamp's offset, else 0.
static size_t s_stamp_at(const char *name, const char *base)
{
    size_t len = strlen(base);
    if (strncmp(name, base, len) != 0 || name[len] != '.') {
        return 0;
    }
    const char *stamp = name + len + 1;
    for (size_t i = 0; i < STAMP_LEN; i++) {
        bool ok = i == 8 ? stamp[i] == 'T' : i == 15 ? stamp[i] == '.' : stamp[i] >= '0' && stamp[i] <= '9';
        if (!ok) {
            return 0;
        }
    }
    const char *rest = stamp + STAMP_LEN;
    if (rest[0] == '-') { // a second file set aside in the same millisecond
        size_t digits = strspn(rest + 1, "0123456789");
        rest += digits ? digits + 1 : 0;
    }
    return !*rest || !strcmp(rest, ".gz") ? len + 1 : 0;
}

//  A name set aside without its .gz: both forms are one file.
static size_t s_stem(const char *name)
{
    size_t len = strlen(name);
    return len > 3 && !strcmp(name + len - 3, ".gz") ? len - 3 : len;
}

static int s_newest_first(const void *a, const void *b)
{
    return -strcmp(*(char *const *)a, *(char *const *)b);
}

//  The files set aside beyond the max_files newest removed (a stamp's
//  .gz and its uncompressed form count as one); with compress, each kept
//  one that has no .gz yet compressed (the one just set aside, and one an
//  instance that ended did not finish).
static void s_prune(const char *path, int64_t max_files, bool compress)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : dir;
    if (slash) {
        *slash = '\0';
    }
    DIR *d = opendir(slash ? (dir[0] ? dir : "/") : ".");
    if (!d) {
        return;
    }
    char **names = NULL;
    size_t count = 0;
    struct dirent *entry;
    while ((entry = readdir(d))) {
        size_t at = s_stamp_at(entry->d_name, base);
        char **grown = at ? realloc(names, (count + 1) * sizeof *names) : NULL;
        if (grown) {
            names = grown;
            names[count] = strdup(entry->d_name);
            count += names[count] != NULL;
        }
    }
    closedir(d);
    qsort(names, count, sizeof *names, s_newest_first);
    int64_t kept = 0;
    for (size_t i = 0; i < count; i++) {
        bool same =
            i > 0 && s_stem(names[i]) == s_stem(names[i - 1]) && !strncmp(names[i], names[i - 1], s_stem(names[i]));
        kept += !same;
        char file[PATH_MAX + 300];
        snprintf(file, sizeof file, "%s/%s", slash ? (dir[0] ? dir : "") : ".", names[i]);
        if (kept > max_files) {
            unlink(file);
        } else if (compress && !same && s_stem(names[i]) == strlen(names[i])) {
            s_compress_later(file); // plain, and no .gz of it sorted just before
        }
    }
    for (size_t i = 0; i < count; i++) {
        free(names[i]); // after the loop: each is compared with the one before
    }
    free(names);
}

//  ---------------------------------------------------------------- rotating

int drv_rotate_lock(const char *path, int fd, drv_rotate_open_fn open_fn)
{
    flock(fd, LOCK_SH); // a rotation under way (LOCK_EX) ends first
    struct stat mine, named;
    if (fstat(fd, &mine) != 0 || !S_ISREG(mine.st_mode) || lstat(path, &named) != 0 ||
        (named.st_dev == mine.st_dev && named.st_ino == mine.st_ino)) {
        return fd; // still the file, or nothing better to write to
    }
    char why[300];
    int next = open_fn(path, why, sizeof why);
    if (next < 0) {
        return fd; // set aside, it still takes the batch: nothing lost
    }
    flock(fd, LOCK_UN);
    close(fd);
    flock(next, LOCK_SH);
    return next;
}

void drv_rotate_unlock(int fd)
{
    flock(fd, LOCK_UN);
}

//  path.STAMP, not taken yet.
static void s_aside_name(const char *path, char *aside, size_t size)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
    snprintf(aside, size, "%s.%s.%03ld", path, stamp, now.tv_nsec / 1000000);
    struct stat st;
    for (int n = 1; lstat(aside, &st) == 0 && n < 1000; n++) {
        snprintf(aside, size, "%s.%s.%03ld-%d", path, stamp, now.tv_nsec / 1000000, n);
    }
}

int drv_rotate_check(const drv_rotate_t *rotate, const char *path, int fd, drv_rotate_open_fn open_fn, char *why,
                     size_t whylen)
{
    struct stat mine, named;
    if (rotate->max_bytes <= 0 || fstat(fd, &mine) != 0 || !S_ISREG(mine.st_mode) || mine.st_size < rotate->max_bytes) {
        return fd;
    }
    flock(fd, LOCK_EX); // another instance rotating this path finishes first
    char aside[PATH_MAX + 64] = "";
    if (lstat(path, &named) == 0 && named.st_dev == mine.st_dev && named.st_ino == mine.st_ino) {
        s_aside_name(path, aside, sizeof aside);
        if (rename(path, aside) != 0) {
            snprintf(why, whylen, "cannot rename %s aside: %s", path, strerror(errno));
            flock(fd, LOCK_UN);
            return -1;
        }
    } // else: another instance set it aside; the path is a new file
    int next = open_fn(path, why, whylen);
    flock(fd, LOCK_UN);
    if (next < 0) {
        return -1; // fd goes on (set aside, it still grows): nothing lost
    }
    close(fd);
    if (aside[0]) {
        drv_info("file rotated path=%s aside=%s bytes=%lld", path, aside, (long long)mine.st_size);
        s_prune(path, rotate->max_files, rotate->compress);
    }
    return next;
}
