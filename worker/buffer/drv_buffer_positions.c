/*  drv_buffer_positions — each exporter's own position in the log
    (drv_buffer.h; docs/operations.md, "Exporter queues"): an exporter that
    fell behind reads again from where it stopped while the log is read on
    for the others, and where each exporter stands survives a crash in the
    slot's `positions` file, so that what an exporter delivered is not
    delivered again when the log is replayed. */
#include "drv_buffer_internal.h"

#include "drover/drv_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define POSITIONS "positions"
#define POSITIONS_NEW "positions.new"
#define POSITIONS_MAX (64 << 10)

struct drv_buffer_reader_t {
    drv_buffer_t *buffer;
    drv_wal_reader_t *wal;
    char node[256];
};

drv_buffer_reader_t *drv_buffer_reader_open(drv_buffer_t *self, int64_t from)
{
    drv_buffer_reader_t *reader = calloc(1, sizeof *reader);
    if (reader) {
        reader->buffer = self;
        reader->wal = drv_wal_reader_open(self->wal, from);
    }
    if (reader && !reader->wal) {
        free(reader);
        return NULL;
    }
    return reader;
}

void drv_buffer_reader_close(drv_buffer_reader_t **reader_p)
{
    if (reader_p && *reader_p) {
        drv_wal_reader_close(&(*reader_p)->wal);
        free(*reader_p);
        *reader_p = NULL;
    }
}

int drv_buffer_reader_next(drv_buffer_reader_t *reader, drv_buffer_input_t *input, char *err, size_t errlen)
{
    drv_wal_entry_t entry;
    int rc;
    while ((rc = drv_wal_reader_next(reader->wal, &entry, err, errlen)) == 1) {
        if (drv_buffer_input_of(&entry, reader->node, input)) {
            input->replayed = entry.number <= reader->buffer->found_last;
            return 1;
        }
    }
    return rc;
}

int64_t drv_buffer_bytes_from(drv_buffer_t *self, int64_t number)
{
    return drv_wal_bytes_from(self->wal, number);
}

int64_t drv_buffer_segment_after(const drv_buffer_t *self, int64_t number)
{
    return drv_wal_segment_after(self->wal, number);
}

int64_t drv_buffer_records_between(drv_buffer_t *self, int64_t from, int64_t to)
{
    return drv_wal_records_between(self->wal, from, to);
}

int64_t drv_buffer_fit_from(drv_buffer_t *self, int64_t from, int64_t max_bytes, int64_t *records_skipped)
{
    return drv_wal_fit_from(self->wal, from, max_bytes, records_skipped);
}

bool drv_buffer_drops_oldest(const drv_buffer_t *self)
{
    return self->policy.drop_oldest;
}

//  ---------------------------------------------------------------- kept across a crash

int drv_buffer_positions_save(drv_buffer_t *self, const json_t *positions, char *err, size_t errlen)
{
    char *text = json_dumps(positions, JSON_COMPACT | JSON_SORT_KEYS);
    int dir_fd = drv_wal_dir_fd(self->wal);
    //  Written beside and renamed over: a crash leaves the old or the new,
    //  never half of one. Not synced: a power cut may cost the last ones,
    //  which then means records delivered again, never lost.
    int fd =
        text ? openat(dir_fd, POSITIONS_NEW, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600)
             : -1;
    size_t len = text ? strlen(text) : 0;
    bool ok = fd >= 0 && write(fd, text, len) == (ssize_t)len;
    int saved = errno;
    if (fd >= 0) {
        close(fd);
    }
    ok = ok && renameat(dir_fd, POSITIONS_NEW, dir_fd, POSITIONS) == 0;
    free(text);
    if (!ok) {
        snprintf(err, errlen, "cannot write %s/%s: %s", self->dir, POSITIONS, strerror(errno ? errno : saved));
        return -1;
    }
    return 0;
}

json_t *drv_buffer_positions_load(drv_buffer_t *self)
{
    json_t *positions = drv_buffer_positions_at(drv_wal_dir_fd(self->wal), self->dir);
    if (drv_wal_last(self->wal) == 0) {
        //  An empty log numbers from 1 again: positions of the one before
        //  mean nothing (what is saved beside them, the counts, stays).
        drv_buffer_positions_forget(drv_wal_dir_fd(self->wal));
        const char *id;
        json_t *upto;
        void *tmp;
        json_object_foreach_safe(positions, tmp, id, upto)
        {
            if (json_is_integer(upto)) {
                json_object_del(positions, id);
            }
        }
    }
    return positions;
}

void drv_buffer_positions_forget(int dir_fd)
{
    unlinkat(dir_fd, POSITIONS, 0);
}

json_t *drv_buffer_positions_at(int dir_fd, const char *dir)
{
    int fd = openat(dir_fd, POSITIONS, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) {
            drv_warn("disk buffer: exporters' positions not read dir=%s reason=\"%s\": every exporter is given what "
                     "the log holds",
                     dir, strerror(errno));
        }
        return json_object();
    }
    struct stat st;
    char *text = NULL;
    ssize_t got = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= POSITIONS_MAX && (text = malloc(POSITIONS_MAX))) {
        got = read(fd, text, POSITIONS_MAX);
    }
    close(fd);
    json_t *positions = got >= 0 ? json_loadb(text, (size_t)got, 0, NULL) : NULL;
    free(text);
    if (!json_is_object(positions)) {
        drv_warn("disk buffer: exporters' positions unreadable dir=%s file=%s: every exporter is given what the "
                 "log holds",
                 dir, POSITIONS);
        json_decref(positions);
        return json_object();
    }
    return positions;
}

int64_t drv_buffer_append_had(drv_wal_t *wal, const drv_wal_entry_t *entry, const json_t *positions, char *err,
                              size_t errlen)
{
    char node[256];
    drv_buffer_input_t input;
    const char *ids[255];
    size_t count = 0;
    const char *id;
    json_t *upto;
    json_object_foreach((json_t *)positions, id, upto)
    {
        if (json_integer_value(upto) >= entry->number && strlen(id) < 256 && count < 255) {
            ids[count++] = id;
        }
    }
    if (!drv_buffer_input_of(entry, node, &input)) {
        return drv_wal_append(wal, entry->time_ms, entry->records, entry->data, entry->len, false, err, errlen);
    }
    unsigned char head[DRV_BUFFER_HEAD_MAX];
    size_t at = drv_buffer_head(head, &input, ids, count);
    struct iovec pieces[2] = {{head, at}, {(void *)input.data, input.size}};
    return drv_wal_appendv(wal, entry->time_ms, entry->records, pieces, 2, false, err, errlen);
}
