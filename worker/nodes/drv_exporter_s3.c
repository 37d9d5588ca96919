/*  exporter:s3 — records archived as objects in S3 or an S3-compatible
    store (docs/s3.md). Each batch of drv_export is one object: it closes
    at max_object_bytes of records or max_object_age_secs after its first.
    Its records are encoded (ndjson, or one OTLP Export...Request) and
    compressed as they come, RUN_BYTES at a time (worker/s3/drv_s3_object.c),
    and past PART_BYTES its parts go by a multipart upload while it still
    fills (nodes/drv_s3_upload.c); a smaller object goes by one PUT. The
    batch's records settle only when S3 answered the PUT or the completion
    with success; a batch given up (a 4xx, retry.max_elapsed_secs) or let
    go with a multipart upload open has the upload aborted, so no half
    object is ever listed. Requests are signed here (worker/s3/drv_s3_sign.c)
    and driven by libcurl on the instance's loop, as drv_export's own posts
    are. */
#include "drv_export.h"
#include "drv_node.h"
#include "drv_otlp_build.h"
#include "drv_s3_key.h"
#include "drv_s3_object.h"
#include "drv_s3_request.h"
#include "drv_s3_upload.h"
#include "drv_schemas.h"

#include "drover/drv_log.h"
#include "drover/drv_secret.h"
#include "drover/drv_time.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define OBJECTS_SENT 4          // objects uploading at once
#define RUN_BYTES (1024 * 1024) // records (packed) encoded at a time while an object fills

enum { LANE_LOGS, LANE_TRACES, LANE_METRICS, LANE_RECORDS };
static const char *const s_signals[] = {"logs", "traces", "metrics", "records"};

//  The object a lane's open batch makes, once begun.
typedef struct {
    upload_t *upload;
    drv_s3_object_t *object;
    size_t encoded, encoded_bytes; // the open batch's records in it, and their bytes packed
} filling_t;

typedef struct {
    drv_export_t *export; // first: drv_export's hooks find it there
    drv_node_t *node;
    drv_s3_target_t target;
    char *key_template;
    drv_s3_format_t format;
    drv_s3_compression_t compression;
    char instance[300];
    char seq_path[PATH_MAX]; // "" : no file (the sequence starts at the time)
    uint64_t seq_fallback;
    drv_s3_uploads_t uploads;
    filling_t filling[DRV_EXPORT_LANES];
} s3_t;

//  ---------------------------------------------------------------- encoding

static int s_lane(const s3_t *self, const msgpack_object *record, char *why, size_t whylen)
{
    if (self->format != DRV_S3_NDJSON) {
        return drv_otlp_signal_of(record, why, whylen);
    }
    for (uint32_t i = 0; record->type == MSGPACK_OBJECT_MAP && i < record->via.map.size; i++) {
        const msgpack_object_kv *kv = &record->via.map.ptr[i];
        if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == 6 &&
            !memcmp(kv->key.via.str.ptr, "signal", 6) && kv->val.type == MSGPACK_OBJECT_STR) {
            const char *v = kv->val.via.str.ptr;
            size_t n = kv->val.via.str.size;
            return n == 3 && !memcmp(v, "log", 3)      ? LANE_LOGS
                   : n == 4 && !memcmp(v, "span", 4)   ? LANE_TRACES
                   : n == 6 && !memcmp(v, "metric", 6) ? LANE_METRICS
                                                       : LANE_RECORDS;
        }
    }
    return LANE_RECORDS;
}

//  ---------------------------------------------------------------- uploading

//  The object's key: the template filled in with the next number of the
//  sequence. 0, or -1 with why.
static int s_key(s3_t *self, int lane, char *key, size_t keylen, char *why, size_t whylen)
{
    uint64_t seq = 0;
    if (self->seq_path[0]) {
        if (drv_s3_key_next_seq(self->seq_path, &seq, why, whylen) != 0) {
            return -1;
        }
    } else {
        seq = ++self->seq_fallback;
    }
    static const char *const formats[] = {"ndjson", "json", "binpb"};
    static const char *const compressions[] = {".gz", ".zst", ""};
    char ext[32];
    snprintf(ext, sizeof ext, "%s%s", formats[self->format], compressions[self->compression]);
    drv_s3_key_fields_t fields = {
        .signal = s_signals[lane], .instance = self->instance, .seq = seq, .ext = ext, .when = time(NULL)};
    if (drv_s3_key_make(self->key_template, &fields, key, keylen) != 0) {
        snprintf(why, whylen, "the key template makes no key of at most %zu bytes", keylen - 1);
        return -1;
    }
    return 0;
}

//  The lane's object begun: a key drawn, an upload and an encoder made.
//  0, or -1 with why.
static int s_begin(s3_t *self, int lane, filling_t *f, char *why, size_t whylen)
{
    char key[1024];
    if (s_key(self, lane, key, sizeof key, why, whylen) != 0) {
        return -1;
    }
    int signal = lane == LANE_TRACES ? DRV_OTLP_TRACES : lane == LANE_METRICS ? DRV_OTLP_METRICS : DRV_OTLP_LOGS;
    f->object = drv_s3_object_new(self->format, self->compression, signal);
    f->upload = f->object ? drv_s3_upload_new(&self->uploads, key) : NULL;
    if (!f->upload) {
        drv_s3_object_destroy(&f->object);
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    return 0;
}

//  What the lane was making let go (its upload aborted if it had begun).
static void s_let_go(s3_t *self, filling_t *f)
{
    if (f->upload) {
        drv_s3_upload_forget(&self->uploads, f->upload);
    }
    drv_s3_object_destroy(&f->object);
    *f = (filling_t){0};
}

//  records[from, n) encoded into the object (ended: and the object ended):
//  its upload goes on with them. 0, or -1 out of memory (then let go).
static int s_add(s3_t *self, filling_t *f, const msgpack_object *records, size_t n, bool ended)
{
    drv_buf_t *tail = drv_s3_upload_tail(f->upload);
    int rc = drv_s3_object_add(f->object, records + f->encoded, n - f->encoded, tail);
    rc = rc == 0 && ended ? drv_s3_object_finish(f->object, tail) : rc;
    if (rc != 0) {
        s_let_go(self, f);
        return -1;
    }
    f->encoded = n;
    drv_s3_upload_filled(&self->uploads, f->upload, ended);
    return 0;
}

//  A lane's open batch past RUN_BYTES more of records: they go into its
//  object now, so its parts can go while it fills.
static void s_fill(s3_t *self, int lane)
{
    filling_t *f = &self->filling[lane];
    size_t count, bytes;
    const msgpack_object *records = drv_export_open_records(self->export, lane, &count, &bytes);
    if (count < f->encoded) { // the batch went without closing (no memory): so does its object
        s_let_go(self, f);
    }
    char why[300];
    if (bytes - f->encoded_bytes < RUN_BYTES || (!f->upload && s_begin(self, lane, f, why, sizeof why) != 0)) {
        return; // an object that cannot begin now is made whole when its batch is sent
    }
    if (s_add(self, f, records, count, false) == 0) {
        f->encoded_bytes = bytes;
    }
}

//  A lane's batch closed: its object ends, its upload is the batch's.
static void s_closed(void *arg, drv_export_batch_t *batch, void **state)
{
    s3_t *self = arg;
    int lane = drv_export_batch_lane(batch);
    filling_t *f = &self->filling[lane];
    size_t count;
    const msgpack_object *records = drv_export_batch_records(batch, &count);
    char why[300];
    if ((f->upload || s_begin(self, lane, f, why, sizeof why) == 0) && s_add(self, f, records, count, true) == 0) {
        *state = f->upload;
    }
    drv_s3_object_destroy(&f->object);
    *f = (filling_t){0};
}

static int s_send(void *arg, drv_export_batch_t *batch, void **state, const char *body, size_t size, char *err,
                  size_t errlen)
{
    (void)body, (void)size;
    s3_t *self = arg;
    if (!*state) { // its object could not be made when it closed: made whole now
        int lane = drv_export_batch_lane(batch);
        filling_t f = {0};
        size_t count;
        const msgpack_object *records = drv_export_batch_records(batch, &count);
        if (s_begin(self, lane, &f, err, errlen) != 0) {
            return -1;
        }
        if (s_add(self, &f, records, count, true) != 0) {
            snprintf(err, errlen, "out of memory encoding an object");
            return -1;
        }
        drv_s3_object_destroy(&f.object);
        *state = f.upload;
    }
    return drv_s3_upload_send(&self->uploads, batch, *state, err, errlen);
}

static void s_forget(void *arg, void *state)
{
    drv_s3_upload_forget(&((s3_t *)arg)->uploads, state);
}

static int s_fd(void *arg)
{
    return ((s3_t *)arg)->uploads.curl.epoll_fd;
}

static void s_serve(void *arg)
{
    drv_s3_uploads_run(&((s3_t *)arg)->uploads);
}

static int64_t s_due(void *arg)
{
    return ((s3_t *)arg)->uploads.curl.due_ms;
}

static const drv_export_sender_t s_sender = {.send = s_send,
                                             .forget = s_forget,
                                             .fd = s_fd,
                                             .run = s_serve,
                                             .due_ms = s_due,
                                             .in_flight = OBJECTS_SENT,
                                             .closed = s_closed};

//  ---------------------------------------------------------------- the kind

//  A credential from the config (a secret reference resolved) or the
//  environment: a malloc'd copy, NULL when neither has it.
static char *s_credential(const json_t *credentials, const char *field, const char *env, char *err, size_t errlen)
{
    const char *given = json_string_value(json_object_get(credentials, field));
    if (given) {
        return drv_secret_resolve(given, err, errlen);
    }
    const char *value = getenv(env);
    return value && value[0] ? strdup(value) : NULL;
}

static int s_choice(const json_t *config, const char *key, const char *const *choices, int n)
{
    const char *value = json_string_value(json_object_get(config, key));
    for (int i = 0; value && i < n; i++) {
        if (!strcmp(value, choices[i])) {
            return i;
        }
    }
    return 0;
}

static int s_setup(s3_t *self, drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    drv_s3_target_t *t = &self->target;
    const char *region = json_string_value(json_object_get(config, "region"));
    char why[300] = "";
    json_t *credentials = json_object_get(config, "credentials");
    t->bucket = strdup(json_string_value(json_object_get(config, "bucket")));
    t->path_style = json_is_true(json_object_get(config, "path_style"));
    t->credentials.region = strdup(region ? region : "us-east-1");
    t->credentials.access_key_id = s_credential(credentials, "access_key_id", "AWS_ACCESS_KEY_ID", why, sizeof why);
    t->credentials.secret_access_key =
        why[0] ? NULL : s_credential(credentials, "secret_access_key", "AWS_SECRET_ACCESS_KEY", why, sizeof why);
    t->credentials.session_token =
        why[0] ? NULL : s_credential(credentials, "session_token", "AWS_SESSION_TOKEN", why, sizeof why);
    if (why[0] || !t->credentials.access_key_id || !t->credentials.secret_access_key) {
        snprintf(err, errlen, "node %s: credentials: %s", node->id,
                 why[0] ? why : "none given, and no AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment");
        return -1;
    }
    json_t *tls = json_object_get(config, "tls");
    const char *ca = json_string_value(json_object_get(tls, "ca_file"));
    t->ca_file = ca ? strdup(ca) : NULL;
    t->insecure = json_is_true(json_object_get(tls, "insecure_skip_verify"));
    json_t *timeout = json_object_get(config, "timeout_ms");
    t->timeout_ms = json_is_integer(timeout) ? (long)json_integer_value(timeout) : 30000;
    if (drv_s3_target_endpoint(t, json_string_value(json_object_get(config, "endpoint")), t->credentials.region, why,
                               sizeof why) != 0) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    static const char *const formats[] = {"ndjson", "otlp_json", "otlp_proto"};
    static const char *const compressions[] = {"gzip", "zstd", "none"};
    self->format = (drv_s3_format_t)s_choice(config, "format", formats, 3);
    self->compression = (drv_s3_compression_t)s_choice(config, "compression", compressions, 3);
    const char *key = json_string_value(json_object_get(config, "key"));
    self->key_template = strdup(key ? key : "{signal}/{instance}-{seq}.{ext}");
    const drv_dag_identity_t *who = drv_node_identity(node);
    snprintf(self->instance, sizeof self->instance, "%s.%s.%d", who->group, who->pipeline, who->core);
    //  The sequence's file: beside the disk buffers when engine.buffer_dir
    //  is there (it outlives a reboot), else in engine.run_dir.
    struct stat st;
    const char *dir =
        who->buffer_dir && stat(who->buffer_dir, &st) == 0 && S_ISDIR(st.st_mode) ? who->buffer_dir : who->run_dir;
    if (dir) {
        snprintf(self->seq_path, sizeof self->seq_path, "%s/s3-%s.%s.seq", dir, self->instance, node->id);
        //  Its multipart uploads written down beside it, and those a killed
        //  instance of this core left open aborted.
        char base[PATH_MAX];
        snprintf(base, sizeof base, "%.*s", (int)(strlen(self->seq_path) - 4), self->seq_path);
        if (drv_s3_uploads_keep(&self->uploads, base, why, sizeof why) != 0) {
            drv_warn("node %s: uploads not written down (%s): a kill leaves them to the lifecycle rule", node->id, why);
        }
    }
    self->seq_fallback = (uint64_t)drv_time_wall_ms() * 1000u;
    return 0;
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    s3_t *self = calloc(1, sizeof *self);
    node->state = self;
    if (!self) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    self->node = node;
    if (drv_s3_uploads_init(&self->uploads, &self->target) != 0) {
        snprintf(err, errlen, "node %s: out of descriptors or memory", node->id);
        return -1;
    }
    if (s_setup(self, node, config, err, errlen) != 0) {
        return -1;
    }
    //  An object is a batch; the queue holds two of them by default (one
    //  filling while one uploads); compression is this kind's own.
    json_t *copy = json_deep_copy(config);
    json_int_t object_bytes = json_integer_value(json_object_get(config, "max_object_bytes"));
    json_int_t age = json_integer_value(json_object_get(config, "max_object_age_secs"));
    object_bytes = object_bytes > 0 ? object_bytes : 64 << 20;
    json_object_set_new(copy, "batch",
                        json_pack("{s:i, s:I, s:I}", "max_records", 100000000, "max_bytes", (json_int_t)object_bytes,
                                  "max_delay_ms", (json_int_t)(age > 0 ? age : 300) * 1000));
    json_object_set_new(copy, "compression", json_string("none"));
    if (!json_object_get(copy, "queue")) {
        json_object_set_new(copy, "queue", json_pack("{s:I}", "max_bytes", 2 * object_bytes + (16 << 20)));
    }
    drv_export_format_t exporting = {.lane_count = DRV_EXPORT_LANES, .arg = self, .sender = &s_sender};
    for (int i = 0; i < DRV_EXPORT_LANES; i++) {
        exporting.lanes[i] = (drv_export_lane_t){self->target.host, "application/octet-stream"};
    }
    self->export = self->uploads.export = drv_export_new(node, copy, &exporting, err, errlen);
    json_decref(copy);
    return self->export ? 0 : -1;
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    s3_t *self = node->state;
    unsigned lanes = 0;
    for (size_t i = 0; i < n; i++) {
        char why[200];
        int lane = s_lane(self, &records[i], why, sizeof why);
        if (lane >= 0) {
            drv_export_record(self->export, lane, &records[i]);
            lanes |= 1u << lane;
        } else {
            drv_node_export_error(node, 1, why);
            drv_node_count_gave_up(node, 1);
        }
    }
    for (int lane = 0; lane < DRV_EXPORT_LANES; lane++) {
        if (lanes & (1u << lane)) {
            s_fill(self, lane);
        }
    }
}

static json_t *s_details(drv_node_t *node)
{
    s3_t *self = node->state;
    const drv_s3_uploads_t *u = &self->uploads;
    return json_pack("{s:{s:I, s:I, s:I, s:I}}", "s3", "objects", (json_int_t)u->objects, "bytes", (json_int_t)u->bytes,
                     "parts", (json_int_t)u->parts, "aborted", (json_int_t)u->aborted);
}

static void s_destroy(drv_node_t *node)
{
    s3_t *self = node->state;
    if (!self) {
        return;
    }
    drv_export_destroy(&self->export); // forgets every batch: open uploads start their aborts
    for (int lane = 0; lane < DRV_EXPORT_LANES; lane++) {
        s_let_go(self, &self->filling[lane]);
    }
    drv_s3_uploads_fini(&self->uploads);
    drv_s3_target_fini(&self->target);
    free(self->key_template);
    free(self);
}

const drv_node_kind_t drv_exporter_s3 = {
    .schema = &drv_schema_exporter_s3,
    .init = s_init,
    .run = s_run,
    DRV_EXPORT_NODE_HOOKS,
    .details = s_details,
    .destroy = s_destroy,
};
