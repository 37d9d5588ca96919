/*  drv_checkpoint — see the header. */
#include "drv_checkpoint.h"

#include "drover/drv_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MARKER "started"

int drv_checkpoint_dir(const char *root, const char *group, const char *pipeline, char *dir, size_t dirlen, char *err,
                       size_t errlen)
{
    snprintf(dir, dirlen, "%s/%s/%s/checkpoints", root, group, pipeline);
    return drv_file_mkdirs(dir, err, errlen);
}

//  A followed file's name in the directory: its device and inode.
static void s_file_name(char *out, size_t len, uint64_t dev, uint64_t ino)
{
    snprintf(out, len, "%" PRIx64 "-%" PRIx64, dev, ino);
}

int drv_checkpoint_lock_name(const char *dir, const char *name)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s.lock", dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int drv_checkpoint_lock(const char *dir, uint64_t dev, uint64_t ino)
{
    char name[64];
    s_file_name(name, sizeof name, dev, ino);
    return drv_checkpoint_lock_name(dir, name);
}

json_t *drv_checkpoint_load_name(const char *dir, const char *name)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    return json_load_file(path, 0, NULL);
}

int drv_checkpoint_save_name(const char *dir, const char *name, const json_t *doc, char *err, size_t errlen)
{
    char path[4400], writing[4500];
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    snprintf(writing, sizeof writing, "%s.writing", path);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    int fd = text ? open(writing, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
    int rc = fd >= 0 && drv_file_write_all(fd, text, strlen(text)) == 0 ? 0 : -1;
    if (fd >= 0 && close(fd) != 0) {
        rc = -1;
    }
    if (rc == 0 && rename(writing, path) != 0) {
        rc = -1;
    }
    if (rc != 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, text ? strerror(errno) : "out of memory");
        unlink(writing);
    }
    free(text);
    return rc;
}

static bool s_parse(const json_t *doc, drv_checkpoint_t *out)
{
    json_t *path = json_object_get(doc, "path"), *fp = json_object_get(doc, "fingerprint");
    if (!json_is_string(path) || !json_is_object(fp) || !json_is_integer(json_object_get(doc, "offset"))) {
        return false;
    }
    *out = (drv_checkpoint_t){.dev = (uint64_t)json_integer_value(json_object_get(doc, "dev")),
                              .ino = (uint64_t)json_integer_value(json_object_get(doc, "ino")),
                              .fingerprint_bytes = (uint32_t)json_integer_value(json_object_get(fp, "bytes")),
                              .fingerprint = (uint32_t)json_integer_value(json_object_get(fp, "crc32c")),
                              .offset = json_integer_value(json_object_get(doc, "offset"))};
    snprintf(out->path, sizeof out->path, "%s", json_string_value(path));
    return out->offset >= 0;
}

static bool s_load_path(const char *file, drv_checkpoint_t *out)
{
    json_t *doc = json_load_file(file, 0, NULL);
    bool ok = doc && s_parse(doc, out);
    json_decref(doc);
    return ok;
}

bool drv_checkpoint_load(const char *dir, uint64_t dev, uint64_t ino, drv_checkpoint_t *out)
{
    char name[64];
    s_file_name(name, sizeof name, dev, ino);
    json_t *doc = drv_checkpoint_load_name(dir, name);
    bool ok = doc && s_parse(doc, out) && out->dev == dev && out->ino == ino;
    json_decref(doc);
    return ok;
}

int drv_checkpoint_save(const char *dir, const drv_checkpoint_t *checkpoint, char *err, size_t errlen)
{
    char name[64];
    s_file_name(name, sizeof name, checkpoint->dev, checkpoint->ino);
    json_t *doc =
        json_pack("{s:s, s:I, s:I, s:{s:I, s:I}, s:I}", "path", checkpoint->path, "dev", (json_int_t)checkpoint->dev,
                  "ino", (json_int_t)checkpoint->ino, "fingerprint", "bytes", (json_int_t)checkpoint->fingerprint_bytes,
                  "crc32c", (json_int_t)checkpoint->fingerprint, "offset", (json_int_t)checkpoint->offset);
    int rc = drv_checkpoint_save_name(dir, name, doc, err, errlen);
    json_decref(doc);
    return rc;
}

void drv_checkpoint_forget(const char *dir, uint64_t dev, uint64_t ino)
{
    char name[64], path[4400];
    s_file_name(name, sizeof name, dev, ino);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    unlink(path);
    snprintf(path, sizeof path, "%s/%s.lock", dir, name);
    unlink(path);
}

void drv_checkpoint_each(const char *dir, bool (*fn)(void *arg, const drv_checkpoint_t *checkpoint), void *arg)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0 || !strchr(e->d_name, '-') ||
            !strncmp(e->d_name, "journald.", 9)) {
            continue;
        }
        char path[4400];
        drv_checkpoint_t checkpoint;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (s_load_path(path, &checkpoint) && !fn(arg, &checkpoint)) {
            break;
        }
    }
    if (d) {
        closedir(d);
    }
}

bool drv_checkpoint_started(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, MARKER);
    return access(path, F_OK) == 0;
}

void drv_checkpoint_mark_started(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, MARKER);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
        close(fd);
    }
}

int drv_checkpoint_join(const char *dir, int64_t generation, int core)
{
    char name[64];
    snprintf(name, sizeof name, "member.%lld.%d", (long long)generation, core);
    return drv_checkpoint_lock_name(dir, name);
}

bool drv_checkpoint_rank(const char *dir, int64_t generation, int core, int *rank, int *count)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    long long newest = -1;
    int cores[256], n = 0;
    long long gens[256];
    while (d && (e = readdir(d))) {
        long long gen;
        int c, used = 0;
        if (sscanf(e->d_name, "member.%lld.%d.lock%n", &gen, &c, &used) != 2 || e->d_name[used] != 0 || n == 256) {
            continue;
        }
        bool self_ = gen == generation && c == core;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!self_) {
            int probe = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
            if (probe >= 0 && flock(probe, LOCK_EX | LOCK_NB) == 0) { // nobody holds it: gone
                //  Removed only when old: a fresh one may be an instance
                //  between making its lock and taking it.
                struct stat st;
                if (fstat(probe, &st) == 0 && st.st_mtime < time(NULL) - 60) {
                    unlink(path);
                }
                close(probe);
                continue;
            }
            if (probe >= 0) {
                close(probe);
            }
        }
        gens[n] = gen;
        cores[n++] = c;
        newest = gen > newest ? gen : newest;
    }
    if (d) {
        closedir(d);
    }
    *rank = 0;
    *count = 0;
    bool member = false;
    for (int i = 0; i < n; i++) {
        if (gens[i] != newest) {
            continue;
        }
        (*count)++;
        *rank += cores[i] < core;
        member |= cores[i] == core && gens[i] == generation;
    }
    return member && generation == newest;
}
