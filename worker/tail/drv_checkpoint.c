/*  drv_checkpoint — see the header. */
#include "drv_checkpoint.h"

#include "drover/drv_file.h"
#include "drover/drv_log.h"
#include "drover/drv_utf8.h"

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

//  A path as bytes: KEY ("path") when it is UTF-8 (what people read), else
//  KEY_hex (a file name may be any bytes but / and NUL). false when
//  neither is there, or the name is not one.
static bool s_path(const json_t *doc, const char *key, char *out, size_t len, char *why, size_t whylen)
{
    char hex_key[32];
    snprintf(hex_key, sizeof hex_key, "%s_hex", key);
    json_t *text = json_object_get(doc, key), *hex = json_object_get(doc, hex_key);
    if (json_is_string(text) && json_string_length(text) < len &&
        !memchr(json_string_value(text), 0, json_string_length(text))) {
        memcpy(out, json_string_value(text), json_string_length(text) + 1);
        return true;
    }
    size_t digits = json_is_string(hex) ? json_string_length(hex) : 0;
    if (!digits || digits % 2 || digits / 2 >= len) {
        snprintf(why, whylen, "%s is not a string of fewer than %zu bytes", key, len);
        return false;
    }
    for (size_t i = 0; i < digits / 2; i++) {
        unsigned byte;
        if (sscanf(json_string_value(hex) + 2 * i, "%2x", &byte) != 1 || byte == 0) {
            snprintf(why, whylen, "%s is not the hex of a path", hex_key);
            return false;
        }
        out[i] = (char)byte;
    }
    out[digits / 2] = 0;
    return true;
}

//  An integer field within [min, max] into *out, else false with why.
static bool s_field(const json_t *doc, const char *key, const char *name, json_int_t min, json_int_t max,
                    json_int_t *out, char *why, size_t whylen)
{
    json_t *value = json_object_get(doc, key);
    if (!json_is_integer(value) || json_integer_value(value) < min || json_integer_value(value) > max) {
        snprintf(why, whylen, "%s is not an integer from %lld to %lld", name, (long long)min, (long long)max);
        return false;
    }
    *out = json_integer_value(value);
    return true;
}

//  Every field in range (docs/security.md): a checkpoint is outside input.
static bool s_parse(const json_t *doc, drv_checkpoint_t *out, char *why, size_t whylen)
{
    json_t *fp = json_object_get(doc, "fingerprint");
    json_int_t dev, ino, bytes, crc, offset;
    if (!json_is_object(doc) || !json_is_object(fp)) {
        snprintf(why, whylen, "not an object with a fingerprint");
        return false;
    }
    if (!s_field(doc, "dev", "dev", INT64_MIN, INT64_MAX, &dev, why, whylen) ||
        !s_field(doc, "ino", "ino", INT64_MIN, INT64_MAX, &ino, why, whylen) ||
        !s_field(fp, "bytes", "fingerprint.bytes", 0, DRV_CHECKPOINT_FINGERPRINT_MAX, &bytes, why, whylen) ||
        !s_field(fp, "crc32c", "fingerprint.crc32c", 0, UINT32_MAX, &crc, why, whylen) ||
        !s_field(doc, "offset", "offset", 0, INT64_MAX, &offset, why, whylen) ||
        !s_path(doc, "path", out->path, sizeof out->path, why, whylen)) {
        return false;
    }
    //  One saved before origin was kept was first followed where it is.
    bool has_origin = json_object_get(doc, "origin") || json_object_get(doc, "origin_hex");
    if (!has_origin) {
        memcpy(out->origin, out->path, sizeof out->origin);
    } else if (!s_path(doc, "origin", out->origin, sizeof out->origin, why, whylen)) {
        return false;
    }
    out->saved_ns = 0;
    out->dev = (uint64_t)dev; // written as signed: a device or inode past 2^63 comes back the same
    out->ino = (uint64_t)ino;
    out->fingerprint_bytes = (uint32_t)bytes;
    out->fingerprint = (uint32_t)crc;
    out->offset = offset;
    return true;
}

bool drv_checkpoint_parse(const char *text, size_t len, drv_checkpoint_t *out, char *why, size_t whylen)
{
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, 0, &jerr);
    bool ok = doc && s_parse(doc, out, why, whylen);
    if (!doc) {
        snprintf(why, whylen, "not JSON: %s", jerr.text);
    }
    json_decref(doc);
    return ok;
}

//  A checkpoint that is not one is renamed aside (NAME.json.bad, for
//  whoever looks) and said: the file it names is then read as one without
//  a checkpoint is.
static bool s_load_path(const char *file, drv_checkpoint_t *out)
{
    json_error_t jerr;
    json_t *doc = json_load_file(file, 0, &jerr);
    char why[200];
    bool ok = doc && s_parse(doc, out, why, sizeof why);
    json_decref(doc);
    struct stat st;
    if (ok && stat(file, &st) == 0) {
        out->saved_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    }
    if (!ok && (doc || access(file, F_OK) == 0)) {
        if (!doc) {
            snprintf(why, sizeof why, "not JSON: %s", jerr.text);
        }
        char aside[4500];
        snprintf(aside, sizeof aside, "%s.bad", file);
        rename(file, aside);
        drv_warn("checkpoint set aside path=%s reason=\"%s\"", aside, why);
    }
    return ok;
}

bool drv_checkpoint_load(const char *dir, uint64_t dev, uint64_t ino, drv_checkpoint_t *out)
{
    char name[64], path[4400];
    s_file_name(name, sizeof name, dev, ino);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    return s_load_path(path, out) && out->dev == dev && out->ino == ino;
}

//  A path put as KEY when it is UTF-8, else as KEY_hex, byte for byte.
static void s_put_path(json_t *doc, const char *key, const char *path)
{
    size_t len = strlen(path);
    if (!doc) {
        return;
    }
    if (drv_utf8_valid(path, len, false)) {
        json_object_set_new(doc, key, json_stringn(path, len));
        return;
    }
    char hex[2 * 4096 + 1], hex_key[32];
    for (size_t i = 0; i < len && i < 4096; i++) {
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)path[i]);
    }
    snprintf(hex_key, sizeof hex_key, "%s_hex", key);
    json_object_set_new(doc, hex_key, json_stringn(hex, 2 * (len < 4096 ? len : 4096)));
}

static json_t *s_doc(const drv_checkpoint_t *checkpoint)
{
    json_t *doc =
        json_pack("{s:I, s:I, s:{s:I, s:I}, s:I}", "dev", (json_int_t)checkpoint->dev, "ino",
                  (json_int_t)checkpoint->ino, "fingerprint", "bytes", (json_int_t)checkpoint->fingerprint_bytes,
                  "crc32c", (json_int_t)checkpoint->fingerprint, "offset", (json_int_t)checkpoint->offset);
    s_put_path(doc, "path", checkpoint->path);
    if (strcmp(checkpoint->origin, checkpoint->path) != 0) {
        s_put_path(doc, "origin", checkpoint->origin);
    }
    return doc;
}

char *drv_checkpoint_text(const drv_checkpoint_t *checkpoint)
{
    json_t *doc = s_doc(checkpoint);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    return text;
}

int drv_checkpoint_save(const char *dir, const drv_checkpoint_t *checkpoint, char *err, size_t errlen)
{
    char name[64];
    s_file_name(name, sizeof name, checkpoint->dev, checkpoint->ino);
    json_t *doc = s_doc(checkpoint);
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

void drv_checkpoint_each(const char *dir, bool (*skip)(void *arg, uint64_t dev, uint64_t ino),
                         bool (*fn)(void *arg, const drv_checkpoint_t *checkpoint), void *arg)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0 || !strchr(e->d_name, '-') ||
            !strncmp(e->d_name, "journald.", 9)) {
            continue;
        }
        uint64_t dev, ino;
        int used = 0;
        if (skip && sscanf(e->d_name, "%" SCNx64 "-%" SCNx64 ".json%n", &dev, &ino, &used) == 2 && !e->d_name[used] &&
            skip(arg, dev, ino)) {
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
    snprintf(name, sizeof name, "member.%lld.%d.lock", (long long)generation, core);
    return drv_file_lock_in(dir, name); // never found unlocked by another's sweep in drv_checkpoint_rank
}

bool drv_checkpoint_joined(const char *dir, int64_t generation, int core, int fd)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/member.%lld.%d.lock", dir, (long long)generation, core);
    return drv_file_names(path, fd);
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
        if (!self_ && drv_file_sweep_unheld(path) == 0) { // nobody holds it: gone
            continue;
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
