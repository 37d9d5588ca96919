/*  drv_s3_ledger — see drv_s3_ledger.h. A file is lines appended as
    uploads begin ("+ ID KEY") and end ("- ID"); what is open is what
    began and has not ended. */
#include "drv_s3_ledger.h"

#include "drover/drv_time.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define SUFFIX ".uploads."

//  The file is made under another name and locked before it is renamed
//  into the names adopters read, so none finds it unlocked while it lives.
//  Its name has the time besides the pid: pids start again in a new PID
//  namespace (droverd as a container's PID 1, restarted).
int drv_s3_ledger_open(drv_s3_ledger_t *self, const char *base, char *why, size_t whylen)
{
    *self = (drv_s3_ledger_t){.fd = -1};
    char fresh[PATH_MAX];
    long pid = (long)getpid();
    long long when = (long long)drv_time_wall_ms() * 1000 + (long long)(drv_time_mono_us() % 1000);
    if (snprintf(self->path, sizeof self->path, "%s" SUFFIX "%ld.%lld", base, pid, when) >= (int)sizeof self->path ||
        snprintf(fresh, sizeof fresh, "%s.uploads-new.%ld.%lld", base, pid, when) >= (int)sizeof fresh) {
        snprintf(why, whylen, "%s: path too long", base);
        return -1;
    }
    int fd = open(fresh, O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0 || rename(fresh, self->path) != 0) {
        snprintf(why, whylen, "%s: %s", self->path, strerror(errno));
        if (fd >= 0) {
            unlink(fresh);
            close(fd);
        }
        return -1;
    }
    self->fd = fd;
    return 0;
}

static void s_write(drv_s3_ledger_t *self, const char *line, size_t len)
{
    if (self->fd >= 0 && write(self->fd, line, len) != (ssize_t)len) {
        //  Not written down: a kill before the upload ends leaves its parts
        //  to the bucket's lifecycle rule, as without a ledger.
        return;
    }
}

void drv_s3_ledger_begun(drv_s3_ledger_t *self, const char *key, const char *upload_id)
{
    char line[2048];
    int n = snprintf(line, sizeof line, "+ %s %s\n", upload_id, key);
    if (self->fd >= 0 && n > 0 && n < (int)sizeof line && !strpbrk(upload_id, " \n") && !strchr(key, '\n')) {
        s_write(self, line, (size_t)n);
        self->open++;
    }
}

void drv_s3_ledger_ended(drv_s3_ledger_t *self, const char *upload_id)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "- %s\n", upload_id);
    if (self->fd >= 0 && n > 0 && n < (int)sizeof line) {
        s_write(self, line, (size_t)n);
        self->open--;
    }
}

//  A dead process's file: its uploads still open, each told to found.
static void s_read_open(drv_s3_ledger_t *self, FILE *f, void (*found)(void *, const char *, const char *), void *arg)
{
    char **lines = NULL;
    size_t count = 0, cap = 0;
    char *line = NULL;
    size_t size = 0;
    ssize_t len;
    while ((len = getline(&line, &size, f)) > 0) {
        line[len - 1] = line[len - 1] == '\n' ? 0 : line[len - 1];
        if (line[0] == '-' && line[1] == ' ') {
            for (size_t i = 0; i < count; i++) { // the "+ ID KEY" it ends goes
                size_t id = strlen(line + 2);
                if (lines[i] && !strncmp(lines[i] + 2, line + 2, id) && lines[i][2 + id] == ' ') {
                    free(lines[i]);
                    lines[i] = NULL;
                    break;
                }
            }
        } else if (line[0] == '+' && line[1] == ' ' && strchr(line + 2, ' ')) {
            char **grown = count == cap ? realloc(lines, (cap = cap ? 2 * cap : 16) * sizeof *lines) : lines;
            if (!grown) {
                break;
            }
            lines = grown;
            lines[count++] = strdup(line);
        }
    }
    free(line);
    for (size_t i = 0; i < count; i++) {
        if (lines[i]) {
            char *key = strchr(lines[i] + 2, ' ');
            *key++ = 0;
            drv_s3_ledger_begun(self, key, lines[i] + 2);
            found(arg, key, lines[i] + 2);
            free(lines[i]);
        }
    }
    free(lines);
}

void drv_s3_ledger_adopt(drv_s3_ledger_t *self, const char *base,
                         void (*found)(void *arg, const char *key, const char *upload_id), void *arg)
{
    if (self->fd < 0) {
        return;
    }
    char dir_copy[PATH_MAX], name_copy[PATH_MAX];
    snprintf(dir_copy, sizeof dir_copy, "%s", base);
    snprintf(name_copy, sizeof name_copy, "%s" SUFFIX, base);
    const char *dir = dirname(dir_copy), *prefix = basename(name_copy);
    DIR *d = opendir(dir);
    struct dirent *entry;
    while (d && (entry = readdir(d))) {
        char path[PATH_MAX];
        if (strncmp(entry->d_name, prefix, strlen(prefix)) != 0 ||
            snprintf(path, sizeof path, "%s/%s", dir, entry->d_name) >= (int)sizeof path || !strcmp(path, self->path)) {
            continue;
        }
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
            continue;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) { // a live process's
            close(fd);
            continue;
        }
        FILE *f = fdopen(fd, "r");
        if (!f) {
            close(fd);
            continue;
        }
        s_read_open(self, f, found, arg);
        unlink(path);
        fclose(f);
    }
    if (d) {
        closedir(d);
    }
}

void drv_s3_ledger_close(drv_s3_ledger_t *self)
{
    if (self->fd < 0) {
        return;
    }
    if (self->open <= 0) {
        unlink(self->path);
    }
    close(self->fd);
    self->fd = -1;
}
