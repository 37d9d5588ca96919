/*  exporter:file — appends whole records to a file, NDJSON or msgpack. The
    path may hold {core}, {generation}, {pipeline} and {group}; it was
    confined to engine.data_dirs when the spec was validated, and a symlink
    at its last component is never followed (docs/security.md).

    It never blocks the instance's loop: the file is written non-blocking,
    and what cannot be written now (a FIFO whose reader is slow or gone, a
    full disk) is held, in order, and retried on a timer (10 ms doubling to
    500 ms), like the HTTP exporters hold what their backend has not taken.
    Held batches are not settled, so nothing is acknowledged upstream until
    it is in the file; past its queue (DRV_FILE_QUEUE_BYTES unless `queue` says) the exporter is
    backlogged and the receivers push back. Never a dropped batch, and the
    other branches of the DAG, the receivers and the heartbeats go on. */
#include "drv_hold.h"
#include "drv_ndjson.h"
#include "drv_rotate.h"
#include "drv_node.h"
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DRV_FILE_QUEUE_BYTES (64 * 1024 * 1024) // queue.max_bytes when not given

typedef struct {
    drv_hold_t *hold; // first: what the file did not take yet (drv_hold's hooks find it there)
    int fd;
    bool msgpack_format;
    char *path;
    drv_rotate_t rotate; // max_bytes 0: never rotated
    int64_t warned_ms;   // a rotation that failed, said at most every 5 s
    bool mid_batch;      // a batch partly written: its rest goes to the same file
} file_t;

//  The path with {core}, {generation}, {pipeline} and {group} filled in, as
//  long as it needs to be; NULL when it would pass DRV_LIMIT_PATH.
static char *s_expand_path(const char *pattern, const drv_dag_identity_t *who)
{
    char core[24], generation[24];
    snprintf(core, sizeof core, "%d", who->core);
    snprintf(generation, sizeof generation, "%lld", (long long)who->generation);
    const struct {
        const char *name;
        const char *value;
    } fields[] = {
        {"{core}", core}, {"{generation}", generation}, {"{pipeline}", who->pipeline}, {"{group}", who->group}};
    drv_buf_t out = {0};
    for (const char *p = pattern; *p;) {
        bool matched = false;
        for (size_t i = 0; i < sizeof fields / sizeof fields[0] && !matched; i++) {
            size_t n = strlen(fields[i].name);
            if (strncmp(p, fields[i].name, n) == 0) {
                drv_buf_append(&out, fields[i].value, strlen(fields[i].value));
                p += n;
                matched = true;
            }
        }
        if (!matched) {
            drv_buf_putc(&out, *p++);
        }
    }
    char *path = NULL;
    if (out.len <= DRV_LIMIT_PATH && drv_buf_putc(&out, 0) == 0) {
        path = strdup(out.data);
    }
    drv_buf_free(&out);
    return path;
}

//  mkdir -p of a file's directory, so a fresh machine needs no set-up.
static void s_make_parent_dirs(const char *path)
{
    char buf[DRV_LIMIT_PATH + 1];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            mkdir(buf, 0755); // failures surface as the open() error below
            *p = '/';
        }
    }
}

//  Opens the file for appending without following a symlink at the last
//  component (a link planted there would make droverd's user append to
//  whatever it points at). A regular file, a FIFO (a reader process;
//  opening waits for it) or a character device (/dev/null); never a block
//  device.
static int s_open_output(const char *path, char *why, size_t whylen)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        snprintf(why, whylen, "%s", errno == ELOOP ? "it is a symbolic link; refusing to follow it" : strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
        snprintf(why, whylen, "it is not a regular file, a FIFO or a character device");
        close(fd);
        return -1;
    }
    return fd;
}

//  A probe: whether the file could be opened, creating nothing. An existing
//  file must be one s_open_output takes and writable; a new one must be
//  creatable where mkdir -p would put it (an unnamed O_TMPFILE file in the
//  nearest existing directory: gone when closed).
static int s_probe_output(const char *path, char *why, size_t whylen)
{
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            snprintf(why, whylen, "it is a symbolic link; refusing to follow it");
        } else if (!(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
            snprintf(why, whylen, "it is not a regular file, a FIFO or a character device");
        } else if (access(path, W_OK) != 0) {
            snprintf(why, whylen, "%s", strerror(errno));
        } else {
            return 0;
        }
        return -1;
    }
    char dir[DRV_LIMIT_PATH + 1];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    while (slash) {
        *slash = 0;
        const char *at = dir[0] ? dir : "/";
        if (stat(at, &st) == 0) {
            int fd = S_ISDIR(st.st_mode) ? open(at, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600) : -1;
            if (fd < 0) {
                snprintf(why, whylen, "cannot create files under %s: %s", at,
                         S_ISDIR(st.st_mode) ? strerror(errno) : "not a directory");
                return -1;
            }
            close(fd);
            return 0;
        }
        slash = strrchr(dir, '/');
    }
    snprintf(why, whylen, "no directory of it exists");
    return -1;
}

static ssize_t s_write(void *arg, const char *data, size_t len, const char **why);

//  The file opened again after a rotation, non-blocking as the first.
static int s_reopen(const char *path, char *why, size_t whylen)
{
    int fd = s_open_output(path, why, whylen);
    if (fd >= 0) {
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    return fd;
}

//  A process killed in the middle of a write leaves a line cut short; the
//  next one would glue its first record to it. NDJSON goes on from a new
//  line, so only the cut record (never acknowledged: it comes again) is
//  lost to a reader (docs/nodes.md).
static void s_new_line(file_t *self, drv_node_t *node)
{
    struct stat st;
    char last = '\n';
    if (self->msgpack_format || fstat(self->fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
        return;
    }
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", self->fd); // the file opened, not whatever the path is now
    int reader = open(link, O_RDONLY | O_CLOEXEC);
    bool cut = reader >= 0 && pread(reader, &last, 1, st.st_size - 1) == 1 && last != '\n';
    if (reader >= 0) {
        close(reader);
    }
    if (!cut) {
        return;
    }
    if (write(self->fd, "\n", 1) == 1) {
        drv_warn("node %s: %s ended in the middle of a line (a writer was killed mid-write): it goes on from a "
                 "new line",
                 node->id, self->path);
    }
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    file_t *self = calloc(1, sizeof *self);
    node->state = self;
    self->fd = -1;
    self->path = s_expand_path(json_string_value(json_object_get(config, "path")), drv_node_identity(node));
    if (!self->path) {
        snprintf(err, errlen, "node %s: path longer than %d bytes once filled in", node->id, DRV_LIMIT_PATH);
        return -1;
    }
    self->rotate = drv_rotate_config(config);
    const char *format = json_string_value(json_object_get(config, "format"));
    self->msgpack_format = format && strcmp(format, "msgpack") == 0;
    char why[200];
    if (drv_node_probe) {
        if (s_probe_output(self->path, why, sizeof why) != 0) {
            snprintf(err, errlen, "node %s: cannot open %s: %s", node->id, self->path, why);
            return -1;
        }
        return 0;
    }
    s_make_parent_dirs(self->path);
    self->fd = s_open_output(self->path, why, sizeof why);
    if (self->fd < 0) {
        snprintf(err, errlen, "node %s: cannot open %s: %s", node->id, self->path, why);
        return -1;
    }
    s_new_line(self, node);
    fcntl(self->fd, F_SETFL, fcntl(self->fd, F_GETFL) | O_NONBLOCK); // opened (a FIFO: its reader is there)
    drv_hold_config_t hold = {.out = s_write,
                              .arg = self,
                              .first_ms = 10,
                              .max_ms = 500,
                              .waits_are_errors = true,
                              .config = config,
                              .queue_bytes = DRV_FILE_QUEUE_BYTES};
    self->hold = drv_hold_new(node, &hold, why, sizeof why);
    if (!self->hold) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    return 0;
}

static void s_destroy(drv_node_t *node)
{
    file_t *self = node->state;
    if (self) {
        if (self->fd >= 0) {
            close(self->fd);
        }
        drv_hold_destroy(&self->hold); // unsettled: the broker redelivers it to the next generation
        free(self->path);
        free(self);
    }
}

//  Writes what it can of data without blocking (drv_hold_out_fn): a full
//  FIFO or disk takes less, and the rest is held.
static ssize_t s_write(void *arg, const char *data, size_t len, const char **why)
{
    file_t *self = arg;
    bool rotating = self->rotate.max_bytes > 0;
    if (rotating && !self->mid_batch) {
        self->fd = drv_rotate_lock(self->path, self->fd, s_reopen);
    }
    size_t done = 0;
    while (done < len) {
        ssize_t written = write(self->fd, data + done, len - done);
        if (written < 0 && errno == EINTR) {
            continue;
        }
        if (written <= 0) {
            *why = written < 0 ? (errno == EAGAIN ? "the reader is not keeping up" : strerror(errno)) : "wrote nothing";
            break;
        }
        done += (size_t)written;
    }
    if (rotating && !self->mid_batch) {
        drv_rotate_unlock(self->fd);
    }
    self->mid_batch = done < len;
    return (ssize_t)done;
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    file_t *self = node->state;
    drv_buf_t *out = drv_node_buffer(node);
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, drv_buf_msgpack_write);
    for (size_t i = 0; i < n; i++) {
        int rc = self->msgpack_format ? msgpack_pack_object(&pk, records[i]) : drv_ndjson_append(out, &records[i]);
        if (rc != 0) {
            drv_node_export_error(node, n, "out of memory encoding");
            drv_node_count_gave_up(node, n);
            return;
        }
    }
    if (self->rotate.max_bytes > 0 && drv_hold_node_holding(node) < 0) {
        //  Between two batches (nothing held: none is half written).
        char why[300];
        int fd = drv_rotate_check(&self->rotate, self->path, self->fd, s_reopen, why, sizeof why);
        if (fd < 0 && drv_time_mono_ms() - self->warned_ms >= 5000) {
            self->warned_ms = drv_time_mono_ms();
            drv_warn("file not rotated node=%s path=%s reason=\"%s\"", node->id, self->path, why);
        }
        self->fd = fd >= 0 ? fd : self->fd;
    }
    //  One append per batch, never interleaved with another batch.
    drv_hold_put(self->hold, node, n, out->data, out->len);
}

const drv_node_kind_t drv_exporter_file = {
    .schema = &drv_schema_exporter_file,
    .init = s_init,
    .run = s_run,
    .fd = drv_hold_node_fd,
    .readable = drv_hold_node_readable,
    .holding = drv_hold_node_holding,
    .backlogged = drv_hold_node_backlogged,
    .backlog = drv_hold_node_backlog,
    .queue = drv_hold_node_queue,
    .destroy = s_destroy,
};
