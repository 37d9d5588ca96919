/*  drv_dag — the node graph and the flow of a batch through it.
    Processors never modify a record in place: they build new maps in the batch
    zone, so a node that fans out to several others hands each the same input. */
#include "drv_dag.h"

#include "drover/drv_limits.h"
#include "drv_buf.h"
#include "drv_ndjson.h"

#include "drover/drv_batch.h"
#include "drover/drv_log.h"
#include "drover/drv_mpjson.h"
#include "drover/drv_time.h"

#include <czmq.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <msgpack.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GENERATOR_BATCH 64

typedef enum {
    NODE_RECEIVER_ZMQ,
    NODE_RECEIVER_GENERATOR,
    NODE_FILTER,
    NODE_TRANSFORM,
    NODE_EXPORTER_FILE,
    NODE_EXPORTER_ZMQ,
    NODE_EXPORTER_NULL,
} node_kind_t;

typedef enum { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_EXISTS } filter_op_t;

typedef struct {
    msgpack_object from; // key to rename
    msgpack_object to;   // its new name
} rename_t;

typedef struct {
    char id[64];
    node_kind_t kind;
    int *to;         // indexes of the nodes this one feeds
    size_t to_count;
    //  processor:filter
    msgpack_object field;
    filter_op_t op;
    msgpack_object value;
    //  processor:transform
    msgpack_object_kv *set;
    size_t set_count;
    rename_t *renames;
    size_t rename_count;
    msgpack_object *deletes;
    size_t delete_count;
    //  receiver:generator
    int64_t rate;     // records/s, 0 = flat out
    int64_t count;    // records to emit, 0 = forever
    int64_t emitted;  // records emitted so far (also the next seq)
    int64_t start_us; // when the generator started, for pacing
    msgpack_object record;
    //  exporter:file
    int fd;
    bool msgpack_format;
    char *path;
    //  exporter:zmq
    zsock_t *socket;
    int64_t last_warn_ms; // rate-limits write-error logs
} node_t;

struct drv_dag_t {
    node_t *nodes; // count nodes, in spec order
    size_t count;
    int core;
    msgpack_zone spec_zone;  // config values as msgpack objects, for the DAG's life
    zlist_t *spec_buffers;   // encoded config bytes that spec_zone objects point into
    msgpack_zone batch_zone; // records of the batch in flight; cleared per batch
    drv_buf_t out;           // exporter encoding buffer, reused
    int64_t records_in;
    int64_t records_out;
    int64_t errors;
    bool abandoned;          // an export gave up while stopping: that batch is not done
    drv_dag_stall_fn *stall_fn;
    void *stall_arg;
};

static const msgpack_object s_key_seq = {.type = MSGPACK_OBJECT_STR, .via.str = {3, "seq"}};
static const msgpack_object s_key_core = {.type = MSGPACK_OBJECT_STR, .via.str = {4, "core"}};

//  ---------------------------------------------------------------- building

//  Converts a JSON config value to a msgpack object that lives as long as the DAG.
static int s_to_object(drv_dag_t *self, const json_t *value, msgpack_object *obj)
{
    char *data;
    size_t size;
    if (drv_mpjson_encode(value, &data, &size) != 0) {
        return -1;
    }
    zlist_append(self->spec_buffers, data);
    size_t offset = 0;
    return msgpack_unpack(data, size, &offset, &self->spec_zone, obj) == MSGPACK_UNPACK_SUCCESS
               ? 0
               : -1;
}

static int s_string_object(drv_dag_t *self, const char *s, msgpack_object *obj)
{
    json_t *str = json_string(s);
    int rc = s_to_object(self, str, obj);
    json_decref(str);
    return rc;
}

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
    } fields[] = {{"{core}", core}, {"{generation}", generation}, {"{pipeline}", who->pipeline}, {"{group}", who->group}};
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

//  Opens an exporter's file for appending without following a symlink at
//  the last component (a link planted there would make droverd's user
//  append to whatever it points at). A regular file, a FIFO (a reader
//  process; opening waits for it) or a character device (/dev/null); never
//  a block device.
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

//  mkdir -p of a file's directory, so a fresh machine needs no set-up.
static void s_make_parent_dirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            mkdir(buf, 0755); // failures surface as the open() error below
            *p = '/';
        }
    }
}

static int s_node_init(drv_dag_t *self, node_t *node, const char *type, json_t *config,
                       const drv_dag_identity_t *who, char *err, size_t errlen)
{
    if (strcmp(type, "receiver:zmq") == 0) {
        node->kind = NODE_RECEIVER_ZMQ;
    } else if (strcmp(type, "receiver:generator") == 0) {
        node->kind = NODE_RECEIVER_GENERATOR;
        node->rate = json_integer_value(json_object_get(config, "rate"));
        node->count = json_integer_value(json_object_get(config, "count"));
        json_t *record = json_object_get(config, "record");
        json_t *empty = json_object();
        int rc = s_to_object(self, record ? record : empty, &node->record);
        json_decref(empty);
        if (rc != 0) {
            snprintf(err, errlen, "node %s: cannot encode record", node->id);
            return -1;
        }
    } else if (strcmp(type, "processor:filter") == 0) {
        static const char *ops[] = {"eq", "ne", "lt", "le", "gt", "ge", "exists"};
        node->kind = NODE_FILTER;
        const char *op = json_string_value(json_object_get(config, "op"));
        for (int i = 0; i < 7; i++) {
            if (op && strcmp(op, ops[i]) == 0) {
                node->op = (filter_op_t)i;
            }
        }
        json_t *value = json_object_get(config, "value");
        if (s_string_object(self, json_string_value(json_object_get(config, "field")), &node->field) ||
            (value && s_to_object(self, value, &node->value))) {
            snprintf(err, errlen, "node %s: cannot encode filter", node->id);
            return -1;
        }
    } else if (strcmp(type, "processor:transform") == 0) {
        node->kind = NODE_TRANSFORM;
        json_t *set = json_object_get(config, "set");
        json_t *rename = json_object_get(config, "rename");
        json_t *del = json_object_get(config, "delete");
        node->set = calloc(json_object_size(set) + 1, sizeof *node->set);
        node->renames = calloc(json_object_size(rename) + 1, sizeof *node->renames);
        node->deletes = calloc(json_array_size(del) + 1, sizeof *node->deletes);
        const char *key;
        json_t *value;
        json_object_foreach(set, key, value)
        {
            msgpack_object_kv *kv = &node->set[node->set_count++];
            if (s_string_object(self, key, &kv->key) || s_to_object(self, value, &kv->val)) {
                return -1;
            }
        }
        json_object_foreach(rename, key, value)
        {
            rename_t *r = &node->renames[node->rename_count++];
            if (s_string_object(self, key, &r->from) ||
                s_string_object(self, json_string_value(value), &r->to)) {
                return -1;
            }
        }
        size_t index;
        json_array_foreach(del, index, value)
        {
            if (s_string_object(self, json_string_value(value), &node->deletes[node->delete_count++])) {
                return -1;
            }
        }
    } else if (strcmp(type, "exporter:file") == 0) {
        node->kind = NODE_EXPORTER_FILE;
        node->path = s_expand_path(json_string_value(json_object_get(config, "path")), who);
        if (!node->path) {
            snprintf(err, errlen, "node %s: path longer than %d bytes once filled in", node->id, DRV_LIMIT_PATH);
            return -1;
        }
        const char *format = json_string_value(json_object_get(config, "format"));
        node->msgpack_format = format && strcmp(format, "msgpack") == 0;
        s_make_parent_dirs(node->path);
        char why[200];
        node->fd = s_open_output(node->path, why, sizeof why);
        if (node->fd < 0) {
            snprintf(err, errlen, "node %s: cannot open %s: %s", node->id, node->path, why);
            return -1;
        }
    } else if (strcmp(type, "exporter:zmq") == 0) {
        node->kind = NODE_EXPORTER_ZMQ;
        const char *kind = json_string_value(json_object_get(config, "socket"));
        const char *endpoint = json_string_value(json_object_get(config, "endpoint"));
        node->socket = zsock_new(kind && strcmp(kind, "pub") == 0 ? ZMQ_PUB : ZMQ_PUSH);
        if (node->socket) {
            //  Batches queued for a slow or absent downstream: bounded (set before
            //  connect), so a stalled consumer becomes back-pressure, not memory.
            int64_t hwm = json_integer_value(json_object_get(config, "hwm"));
            zsock_set_sndhwm(node->socket, hwm > 0 ? (int)hwm : 100);
        }
        if (!node->socket || zsock_connect(node->socket, "%s", endpoint) != 0) {
            snprintf(err, errlen, "node %s: cannot connect %s: %s", node->id, endpoint,
                     zmq_strerror(zmq_errno()));
            return -1;
        }
        zsock_set_linger(node->socket, 5000);
    } else if (strcmp(type, "exporter:null") == 0) {
        node->kind = NODE_EXPORTER_NULL;
    } else {
        snprintf(err, errlen, "node %s: unknown type %s", node->id, type);
        return -1;
    }
    return 0;
}

drv_dag_t *drv_dag_new(const json_t *spec, const drv_dag_identity_t *who, char *err,
                       size_t errlen)
{
    json_t *nodes = json_object_get(spec, "nodes");
    drv_dag_t *self = calloc(1, sizeof *self);
    self->core = who->core;
    self->spec_buffers = zlist_new();
    msgpack_zone_init(&self->spec_zone, 4096);
    msgpack_zone_init(&self->batch_zone, 64 * 1024);
    self->count = json_object_size(nodes);
    self->nodes = calloc(self->count ? self->count : 1, sizeof(node_t));
    const char *id;
    json_t *node;
    size_t index = 0;
    json_object_foreach(nodes, id, node)
    {
        snprintf(self->nodes[index].id, sizeof self->nodes[index].id, "%s", id);
        self->nodes[index].fd = -1;
        index++;
    }
    index = 0;
    json_object_foreach(nodes, id, node)
    {
        node_t *n = &self->nodes[index++];
        json_t *to = json_object_get(node, "to");
        n->to = calloc(json_array_size(to) + 1, sizeof(int));
        size_t k;
        json_t *target;
        json_array_foreach(to, k, target)
        {
            for (size_t j = 0; j < self->count; j++) {
                if (strcmp(self->nodes[j].id, json_string_value(target)) == 0) {
                    n->to[n->to_count++] = (int)j;
                }
            }
        }
        if (s_node_init(self, n, json_string_value(json_object_get(node, "type")),
                        json_object_get(node, "config"), who, err, errlen) != 0) {
            drv_dag_destroy(&self);
            return NULL;
        }
    }
    return self;
}

void drv_dag_destroy(drv_dag_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_dag_t *self = *self_p;
    for (size_t i = 0; i < self->count; i++) {
        node_t *n = &self->nodes[i];
        free(n->to);
        free(n->set);
        free(n->renames);
        free(n->deletes);
        free(n->path);
        if (n->fd >= 0) {
            close(n->fd);
        }
        zsock_destroy(&n->socket);
    }
    free(self->nodes);
    char *buffer;
    while ((buffer = zlist_pop(self->spec_buffers))) {
        free(buffer);
    }
    zlist_destroy(&self->spec_buffers);
    msgpack_zone_destroy(&self->spec_zone);
    msgpack_zone_destroy(&self->batch_zone);
    drv_buf_free(&self->out);
    free(self);
    *self_p = NULL;
}

bool drv_dag_abandoned(const drv_dag_t *self)
{
    return self->abandoned;
}

void drv_dag_set_stall_hook(drv_dag_t *self, drv_dag_stall_fn *fn, void *arg)
{
    self->stall_fn = fn;
    self->stall_arg = arg;
}

bool drv_dag_has_zmq_receivers(const drv_dag_t *self)
{
    for (size_t i = 0; i < self->count; i++) {
        if (self->nodes[i].kind == NODE_RECEIVER_ZMQ) {
            return true;
        }
    }
    return false;
}

void drv_dag_counters(const drv_dag_t *self, int64_t *records_in, int64_t *records_out,
                      int64_t *errors)
{
    *records_in = self->records_in;
    *records_out = self->records_out;
    *errors = self->errors;
}

//  ---------------------------------------------------------------- records

static bool s_same_key(const msgpack_object *a, const msgpack_object *b)
{
    return a->type == MSGPACK_OBJECT_STR && b->type == MSGPACK_OBJECT_STR &&
           a->via.str.size == b->via.str.size &&
           (a->via.str.size == 0 || memcmp(a->via.str.ptr, b->via.str.ptr, a->via.str.size) == 0);
}

static int s_find(const msgpack_object_kv *kv, size_t n, const msgpack_object *key)
{
    for (size_t i = 0; i < n; i++) {
        if (s_same_key(&kv[i].key, key)) {
            return (int)i;
        }
    }
    return -1;
}

static void s_remove(msgpack_object_kv *kv, size_t *n, int index)
{
    memmove(&kv[index], &kv[index + 1], (*n - (size_t)index - 1) * sizeof *kv);
    (*n)--;
}

static bool s_number(const msgpack_object *obj, long double *out)
{
    switch (obj->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        *out = (long double)obj->via.u64;
        return true;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        *out = (long double)obj->via.i64;
        return true;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        *out = (long double)obj->via.f64;
        return true;
    default:
        return false;
    }
}

//  Compares a record value with the filter's value. Returns false when the two
//  cannot be compared; *ordered tells whether lt/le/gt/ge make sense.
static bool s_compare(const msgpack_object *a, const msgpack_object *b, int *cmp, bool *ordered)
{
    long double x, y;
    if (s_number(a, &x) && s_number(b, &y)) {
        *cmp = x < y ? -1 : x > y ? 1 : 0;
        *ordered = true;
        return true;
    }
    if ((a->type == MSGPACK_OBJECT_STR || a->type == MSGPACK_OBJECT_BIN) &&
        b->type == MSGPACK_OBJECT_STR) {
        size_t n = a->via.str.size < b->via.str.size ? a->via.str.size : b->via.str.size;
        int c = n ? memcmp(a->via.str.ptr, b->via.str.ptr, n) : 0; // empty: ptr may be NULL
        *cmp = c ? c : a->via.str.size < b->via.str.size ? -1 : a->via.str.size > b->via.str.size;
        *ordered = true;
        return true;
    }
    if (a->type == b->type && (a->type == MSGPACK_OBJECT_BOOLEAN || a->type == MSGPACK_OBJECT_NIL)) {
        *cmp = a->type == MSGPACK_OBJECT_NIL || a->via.boolean == b->via.boolean ? 0 : 1;
        *ordered = false;
        return true;
    }
    *ordered = false;
    return msgpack_object_equal(*a, *b) ? (*cmp = 0, true) : false;
}

static bool s_matches(const node_t *node, const msgpack_object *record)
{
    int index = s_find(record->via.map.ptr, record->via.map.size, &node->field);
    if (index < 0) {
        return false; // a record without the field matches no op
    }
    if (node->op == OP_EXISTS) {
        return true;
    }
    int cmp = 0;
    bool ordered = false;
    bool comparable = s_compare(&record->via.map.ptr[index].val, &node->value, &cmp, &ordered);
    switch (node->op) {
    case OP_EQ:
        return comparable && cmp == 0;
    case OP_NE:
        return !(comparable && cmp == 0);
    case OP_LT:
        return comparable && ordered && cmp < 0;
    case OP_LE:
        return comparable && ordered && cmp <= 0;
    case OP_GT:
        return comparable && ordered && cmp > 0;
    case OP_GE:
        return comparable && ordered && cmp >= 0;
    default:
        return false;
    }
}

static msgpack_object s_transform(drv_dag_t *self, const node_t *node, const msgpack_object *record)
{
    size_t capacity = record->via.map.size + node->set_count;
    msgpack_object_kv *kv =
        msgpack_zone_malloc(&self->batch_zone, (capacity ? capacity : 1) * sizeof *kv);
    size_t n = record->via.map.size;
    memcpy(kv, record->via.map.ptr, n * sizeof *kv);
    for (size_t i = 0; i < node->set_count; i++) {
        int index = s_find(kv, n, &node->set[i].key);
        if (index >= 0) {
            kv[index].val = node->set[i].val;
        } else {
            kv[n++] = node->set[i];
        }
    }
    for (size_t i = 0; i < node->rename_count; i++) {
        int index = s_find(kv, n, &node->renames[i].from);
        if (index < 0) {
            continue;
        }
        int clash = s_find(kv, n, &node->renames[i].to);
        if (clash >= 0 && clash != index) {
            s_remove(kv, &n, clash); // the renamed key wins
            if (clash < index) {
                index--;
            }
        }
        kv[index].key = node->renames[i].to;
    }
    for (size_t i = 0; i < node->delete_count; i++) {
        int index = s_find(kv, n, &node->deletes[i]);
        if (index >= 0) {
            s_remove(kv, &n, index);
        }
    }
    msgpack_object out = {.type = MSGPACK_OBJECT_MAP};
    out.via.map.ptr = kv;
    out.via.map.size = (uint32_t)n;
    return out;
}

//  ---------------------------------------------------------------- exporters

//  Logs an export failure, at most once per 5 s per node.
static void s_export_warn(node_t *node, size_t records, const char *what)
{
    int64_t now = drv_time_mono_ms();
    if (now - node->last_warn_ms >= 5000) {
        node->last_warn_ms = now;
        drv_warn("export failed node=%s records=%zu reason=\"%s\"", node->id, records, what);
    }
}

static void s_export_error(drv_dag_t *self, node_t *node, size_t records, const char *what)
{
    self->errors += (int64_t)records;
    s_export_warn(node, records, what);
}

//  Waits out a failing write (a full disk, a quota), backing off from 10 ms
//  to 500 ms between attempts, in 10 ms slices with the stall hook called
//  after each, so the instance heartbeats however short its interval.
//  Returns false to give up (the instance is stopping); the batch is then not
//  acknowledged.
static bool s_wait_to_retry(drv_dag_t *self, int64_t *backoff_ms)
{
    int64_t until = drv_time_mono_ms() + *backoff_ms;
    do {
        if (!self->stall_fn || self->stall_fn(self->stall_arg)) {
            self->abandoned = true;
            return false;
        }
        poll(NULL, 0, 10);
    } while (drv_time_mono_ms() < until);
    *backoff_ms = *backoff_ms * 2 > 500 ? 500 : *backoff_ms * 2;
    return true;
}

static void s_export_file(drv_dag_t *self, node_t *node, const msgpack_object *records, size_t n)
{
    drv_buf_reset(&self->out);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &self->out, drv_buf_msgpack_write);
    for (size_t i = 0; i < n; i++) {
        int rc = node->msgpack_format ? msgpack_pack_object(&pk, records[i])
                                      : drv_ndjson_append(&self->out, &records[i]);
        if (rc != 0) {
            s_export_error(self, node, n, "out of memory encoding");
            return;
        }
    }
    //  One append per batch: records are never split by another writer. A
    //  failing write is retried until it succeeds (back-pressure: the batch
    //  is not acknowledged, so nothing more comes in); its records count as
    //  errors once.
    size_t done = 0;
    bool failed = false;
    int64_t backoff_ms = 10;
    while (done < self->out.len) {
        ssize_t written = write(node->fd, self->out.data + done, self->out.len - done);
        if (written < 0 && errno == EINTR) {
            continue;
        }
        if (written <= 0) {
            const char *what = written < 0 ? strerror(errno) : "wrote nothing";
            if (failed) {
                s_export_warn(node, n, what); // still the same batch: counted once
            } else {
                s_export_error(self, node, n, what);
            }
            failed = true;
            if (!s_wait_to_retry(self, &backoff_ms)) {
                return;
            }
            continue;
        }
        done += (size_t)written;
    }
    if (failed) {
        drv_info("export recovered node=%s records=%zu", node->id, n);
    }
    self->records_out += (int64_t)n;
}

static void s_export_zmq(drv_dag_t *self, node_t *node, const msgpack_object *records, size_t n)
{
    drv_buf_reset(&self->out);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &self->out, drv_buf_msgpack_write);
    msgpack_pack_array(&pk, n);
    for (size_t i = 0; i < n; i++) {
        msgpack_pack_object(&pk, records[i]);
    }
    void *socket = zsock_resolve(node->socket);
    while (zmq_send(socket, self->out.data, self->out.len, ZMQ_DONTWAIT) < 0) {
        if (zmq_errno() != EAGAIN && zmq_errno() != EINTR) {
            s_export_error(self, node, n, zmq_strerror(zmq_errno()));
            return;
        }
        //  Back-pressure from downstream: wait, but keep the instance alive.
        if (self->stall_fn && self->stall_fn(self->stall_arg)) {
            s_export_error(self, node, n, "stopped while blocked downstream");
            self->abandoned = true;
            return;
        }
        zmq_pollitem_t item = {socket, 0, ZMQ_POLLOUT, 0};
        zmq_poll(&item, 1, 100);
    }
    self->records_out += (int64_t)n;
}

//  ---------------------------------------------------------------- flow

static void s_run(drv_dag_t *self, node_t *node, const msgpack_object *records, size_t n);

static void s_forward(drv_dag_t *self, node_t *node, const msgpack_object *records, size_t n)
{
    for (size_t i = 0; i < node->to_count; i++) {
        s_run(self, &self->nodes[node->to[i]], records, n);
    }
}

static void s_run(drv_dag_t *self, node_t *node, const msgpack_object *records, size_t n)
{
    switch (node->kind) {
    case NODE_FILTER: {
        msgpack_object *kept = msgpack_zone_malloc(&self->batch_zone, (n ? n : 1) * sizeof *kept);
        size_t count = 0;
        for (size_t i = 0; i < n; i++) {
            if (s_matches(node, &records[i])) {
                kept[count++] = records[i];
            }
        }
        if (count > 0) {
            s_forward(self, node, kept, count);
        }
        break;
    }
    case NODE_TRANSFORM: {
        msgpack_object *out = msgpack_zone_malloc(&self->batch_zone, (n ? n : 1) * sizeof *out);
        for (size_t i = 0; i < n; i++) {
            out[i] = s_transform(self, node, &records[i]);
        }
        s_forward(self, node, out, n);
        break;
    }
    case NODE_EXPORTER_FILE:
        s_export_file(self, node, records, n);
        break;
    case NODE_EXPORTER_ZMQ:
        s_export_zmq(self, node, records, n);
        break;
    case NODE_EXPORTER_NULL:
        self->records_out += (int64_t)n;
        break;
    default:
        s_forward(self, node, records, n);
        break;
    }
}

int drv_dag_ingest(drv_dag_t *self, const char *node_id, const void *data, size_t size, char *err,
                   size_t errlen)
{
    node_t *node = NULL;
    for (size_t i = 0; i < self->count; i++) {
        if (self->nodes[i].kind == NODE_RECEIVER_ZMQ && strcmp(self->nodes[i].id, node_id) == 0) {
            node = &self->nodes[i];
        }
    }
    if (!node) {
        snprintf(err, errlen, "no receiver:zmq node \"%s\"", node_id);
        self->errors++;
        return -1;
    }
    msgpack_zone_clear(&self->batch_zone);
    msgpack_object root;
    const msgpack_object *records;
    int n = drv_batch_decode(data, size, &self->batch_zone, &root, &records, err, errlen);
    if (n < 0) {
        self->errors++;
        return -1;
    }
    self->records_in += n;
    s_forward(self, node, records, (size_t)n);
    return n;
}

static void s_generate_batch(drv_dag_t *self, node_t *node, size_t n)
{
    msgpack_zone_clear(&self->batch_zone);
    msgpack_object *records = msgpack_zone_malloc(&self->batch_zone, n * sizeof *records);
    const msgpack_object_kv *tmpl = node->record.via.map.ptr;
    size_t tmpl_size = node->record.via.map.size;
    for (size_t i = 0; i < n; i++) {
        msgpack_object_kv *kv = msgpack_zone_malloc(&self->batch_zone, (tmpl_size + 2) * sizeof *kv);
        size_t count = 0;
        for (size_t k = 0; k < tmpl_size; k++) {
            if (!s_same_key(&tmpl[k].key, &s_key_seq) && !s_same_key(&tmpl[k].key, &s_key_core)) {
                kv[count++] = tmpl[k];
            }
        }
        kv[count].key = s_key_seq;
        kv[count].val.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
        kv[count++].val.via.u64 = (uint64_t)node->emitted++;
        kv[count].key = s_key_core;
        kv[count].val.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
        kv[count++].val.via.u64 = (uint64_t)self->core;
        records[i].type = MSGPACK_OBJECT_MAP;
        records[i].via.map.ptr = kv;
        records[i].via.map.size = (uint32_t)count;
    }
    self->records_in += (int64_t)n;
    s_forward(self, node, records, n);
}

int drv_dag_generate(drv_dag_t *self, int64_t now_us, int64_t *wait_us)
{
    int emitted = 0;
    *wait_us = -1;
    for (size_t i = 0; i < self->count; i++) {
        node_t *node = &self->nodes[i];
        if (node->kind != NODE_RECEIVER_GENERATOR) {
            continue;
        }
        if (node->count > 0 && node->emitted >= node->count) {
            continue; // finished
        }
        if (node->start_us == 0) {
            node->start_us = now_us;
        }
        int64_t due = GENERATOR_BATCH;
        if (node->rate > 0) {
            due = (now_us - node->start_us) * node->rate / 1000000 + 1 - node->emitted;
        }
        if (node->count > 0 && due > node->count - node->emitted) {
            due = node->count - node->emitted;
        }
        if (due > GENERATOR_BATCH) {
            due = GENERATOR_BATCH;
        }
        if (due > 0) {
            s_generate_batch(self, node, (size_t)due);
            emitted += (int)due;
        }
        int64_t wait = 0;
        if (node->count > 0 && node->emitted >= node->count) {
            continue;
        }
        if (node->rate > 0) {
            int64_t next_us = node->start_us + node->emitted * 1000000 / node->rate;
            wait = next_us > now_us ? next_us - now_us : 0;
        }
        if (*wait_us < 0 || wait < *wait_us) {
            *wait_us = wait;
        }
    }
    return emitted;
}
