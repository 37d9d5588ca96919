/*  drv_handover — see drv_handover.h. */
#include "drv_handover.h"
#include "drv_buffer_internal.h"

#include "drover/drv_file.h"
#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SEGMENT_BYTES (1 << 20)
#define PREFIX "handover."

struct drv_handover_t {
    char dir[4096];   // where it is (writing: writing.*, until closed)
    char final[4096]; // where it goes once whole (writing)
    drv_wal_t *wal;
    int lock_fd; // claimed: its lock, held
    char node[256];
};

static void s_pipeline_dir(const char *root, const char *group, const char *pipeline, char *out, size_t size)
{
    snprintf(out, size, "%s/%s/%s", root, group && *group ? group : "_", pipeline);
}

//  Deletes a handover directory's files (segments, lock) and itself; never
//  through a link (docs/security.md).
static void s_remove(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (fd >= 0 && !d) {
        close(fd);
        return;
    }
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            unlinkat(dirfd(d), e->d_name, 0);
        }
    }
    if (d) {
        closedir(d);
    }
    rmdir(dir);
}

drv_handover_t *drv_handover_create(const char *root, const char *group, const char *pipeline, int core,
                                    int64_t generation, char *err, size_t errlen)
{
    drv_handover_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    self->lock_fd = -1;
    static unsigned s_seq; // an instance may hand over more than once
    char base[4096];
    s_pipeline_dir(root, group, pipeline, base, sizeof base);
    snprintf(self->dir, sizeof self->dir, "%s/writing.%d.%lld.%d.%u", base, core, (long long)generation, (int)getpid(),
             s_seq);
    snprintf(self->final, sizeof self->final, "%s/" PREFIX "%d.%lld.%d.%u", base, core, (long long)generation,
             (int)getpid(), s_seq++);
    s_remove(self->dir); // one an earlier process of this pid left half-written
    if (drv_file_mkdirs(self->dir, err, errlen) != 0 ||
        !(self->wal = drv_wal_open(self->dir, self->dir, SEGMENT_BYTES, err, errlen))) {
        s_remove(self->dir);
        free(self);
        return NULL;
    }
    return self;
}

int drv_handover_put(drv_handover_t *self, const drv_buffer_input_t *input, const char *const *had, size_t count,
                     char *err, size_t errlen)
{
    unsigned char head[DRV_BUFFER_HEAD_MAX];
    size_t at = drv_buffer_head(head, input, had, count);
    struct iovec pieces[2] = {{head, at}, {(void *)input->data, input->size}};
    return drv_wal_appendv(self->wal, drv_time_wall_ms(), input->records, pieces, 2, false, err, errlen) < 0 ? -1 : 0;
}

int drv_handover_close(drv_handover_t **self_p, bool commit, char *err, size_t errlen)
{
    drv_handover_t *self = *self_p;
    *self_p = NULL;
    bool keep = commit && drv_wal_last(self->wal) > 0;
    int rc = keep ? drv_wal_sync(self->wal, err, errlen) : 0;
    drv_wal_close(&self->wal);
    if (keep && rc == 0 && rename(self->dir, self->final) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", self->dir, self->final, strerror(errno));
        rc = -1;
    }
    if (!keep || rc != 0) {
        s_remove(self->dir);
    }
    free(self);
    return rc;
}

drv_handover_t *drv_handover_claim(const char *root, const char *group, const char *pipeline)
{
    char base[4096];
    s_pipeline_dir(root, group, pipeline, base, sizeof base);
    DIR *d = opendir(base);
    struct dirent *e;
    drv_handover_t *self = NULL;
    while (d && !self && (e = readdir(d))) {
        if (strncmp(e->d_name, PREFIX, strlen(PREFIX)) != 0) {
            continue;
        }
        char dir[4500], err[400];
        snprintf(dir, sizeof dir, "%s/%s", base, e->d_name);
        int lock_fd = drv_buffer_lock(dir, err, sizeof err);
        static int64_t s_refused_told_ms; // said at most once a minute per process
        if (lock_fd == DRV_BUFFER_LOCK_REFUSED && drv_time_mono_ms() - s_refused_told_ms >= 60000) {
            s_refused_told_ms = drv_time_mono_ms();
            drv_warn("handover passed over: %s", err);
        }
        if (lock_fd < 0) {
            continue; // claimed by another, or not what it should be (a link is never followed)
        }
        self = calloc(1, sizeof *self);
        if (self) {
            snprintf(self->dir, sizeof self->dir, "%s", dir);
            self->lock_fd = lock_fd;
            self->wal = drv_wal_open(dir, dir, SEGMENT_BYTES, err, sizeof err);
        }
        if (!self || !self->wal) {
            drv_warn("handover unreadable dir=%s reason=\"%s\"", dir, self ? err : "out of memory");
            close(lock_fd);
            free(self);
            self = NULL;
        }
    }
    if (d) {
        closedir(d);
    }
    return self;
}

int drv_handover_next(drv_handover_t *self, drv_buffer_input_t *input, char *err, size_t errlen)
{
    drv_wal_entry_t entry;
    int rc;
    while ((rc = drv_wal_next(self->wal, &entry, err, errlen)) == 1) {
        if (drv_buffer_input_of(&entry, self->node, input)) {
            return 1;
        }
    }
    return rc;
}

void drv_handover_settled(drv_handover_t *self, int64_t number)
{
    drv_wal_settled(self->wal, number);
}

void drv_handover_finish(drv_handover_t **self_p)
{
    drv_handover_t *self = *self_p;
    if (!self) {
        return;
    }
    drv_wal_close(&self->wal);
    s_remove(self->dir);
    drv_handover_release(self_p);
}

void drv_handover_release(drv_handover_t **self_p)
{
    drv_handover_t *self = *self_p;
    if (!self) {
        return;
    }
    *self_p = NULL;
    drv_wal_close(&self->wal);
    if (self->lock_fd >= 0) {
        close(self->lock_fd);
    }
    free(self);
}

const char *drv_handover_dir(const drv_handover_t *self)
{
    return self->dir;
}
