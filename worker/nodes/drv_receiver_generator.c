/*  receiver:generator — copies of a record at a rate, with seq (per
    instance, from 0), core and the observed time added: for demos, tests
    and benchmarks. A batch is kept for an exporter behind (the memory log,
    a handover) as what makes it again — the template packed, the first
    seq, the count, the core and the time — not as its records packed one
    by one (docs/benchmarks.md, B22), and made again by replay. */
#include "drv_node.h"
#include "drv_record.h"
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#define BATCH 64      // records per batch at most
#define RAW_MAGIC 'G' // a kept batch: "G", version, then RAW_HEAD bytes, then the template
#define RAW_HEAD 26   // magic, version, first seq (8), count (4), core (4), observed ns (8)

typedef struct {
    int64_t rate;           // records/s, 0 = flat out
    int64_t count;          // records to emit, 0 = forever
    int64_t emitted;        // records emitted so far (also the next seq)
    int64_t start_us;       // when it started, for pacing
    msgpack_object record;  // the template
    msgpack_sbuffer packed; // the template packed: what a kept batch carries
} generator_t;

static const msgpack_object s_key_seq = {.type = MSGPACK_OBJECT_STR, .via.str = {3, "seq"}};
static const msgpack_object s_key_core = {.type = MSGPACK_OBJECT_STR, .via.str = {4, "core"}};
static const msgpack_object s_key_observed = {.type = MSGPACK_OBJECT_STR, .via.str = {23, "observed_time_unix_nano"}};

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    generator_t *self = calloc(1, sizeof *self);
    node->state = self;
    if (!self) {
        snprintf(err, errlen, "node %s: out of memory", node->id);
        return -1;
    }
    msgpack_sbuffer_init(&self->packed);
    self->rate = json_integer_value(json_object_get(config, "rate"));
    self->count = json_integer_value(json_object_get(config, "count"));
    json_t *record = json_object_get(config, "record");
    json_t *empty = json_object();
    int rc = drv_node_object(node, record ? record : empty, &self->record);
    json_decref(empty);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &self->packed, msgpack_sbuffer_write);
    if (rc != 0 || msgpack_pack_object(&pk, self->record) != 0) {
        snprintf(err, errlen, "node %s: cannot encode record", node->id);
        return -1;
    }
    return 0;
}

//  n copies of the template, seq from first on, stamped with core and
//  (unless the template says it) the observed time; in the batch zone.
static msgpack_object *s_make(drv_node_t *node, const msgpack_object *tmpl_record, uint64_t first, size_t n,
                              uint64_t core, uint64_t observed_ns)
{
    msgpack_object *records = drv_node_alloc(node, n * sizeof *records);
    const msgpack_object_kv *tmpl = tmpl_record->via.map.ptr;
    size_t tmpl_size = tmpl_record->type == MSGPACK_OBJECT_MAP ? tmpl_record->via.map.size : 0;
    bool observed = false;
    for (size_t k = 0; k < tmpl_size; k++) {
        observed |= drv_record_same_key(&tmpl[k].key, &s_key_observed);
    }
    for (size_t i = 0; records && i < n; i++) {
        msgpack_object_kv *kv = drv_node_alloc(node, (tmpl_size + 3) * sizeof *kv);
        if (!kv) {
            return NULL;
        }
        size_t count = 0;
        for (size_t k = 0; k < tmpl_size; k++) {
            if (!drv_record_same_key(&tmpl[k].key, &s_key_seq) && !drv_record_same_key(&tmpl[k].key, &s_key_core)) {
                kv[count++] = tmpl[k];
            }
        }
        kv[count].key = s_key_seq;
        kv[count].val.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
        kv[count++].val.via.u64 = first + i;
        kv[count].key = s_key_core;
        kv[count].val.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
        kv[count++].val.via.u64 = core;
        if (!observed) { // as the DAG stamps what it takes (drv_record_observed), without its copy
            kv[count].key = s_key_observed;
            kv[count].val.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
            kv[count++].val.via.u64 = observed_ns;
        }
        records[i].type = MSGPACK_OBJECT_MAP;
        records[i].via.map.ptr = kv;
        records[i].via.map.size = (uint32_t)count;
    }
    return records;
}

static void s_put_le(unsigned char *at, uint64_t value, int bytes)
{
    for (int i = 0; i < bytes; i++) {
        at[i] = (unsigned char)(value >> (8 * i));
    }
}

static uint64_t s_get_le(const unsigned char *at, int bytes)
{
    uint64_t value = 0;
    for (int i = 0; i < bytes; i++) {
        value |= (uint64_t)at[i] << (8 * i);
    }
    return value;
}

static void s_emit(drv_node_t *node, generator_t *self, size_t n)
{
    uint64_t core = (uint64_t)drv_node_identity(node)->core, first = (uint64_t)self->emitted;
    uint64_t observed = (uint64_t)drv_time_wall_ms() * 1000000u;
    msgpack_object *records = s_make(node, &self->record, first, n, core, observed);
    if (!records) {
        drv_node_record_error(node, "out of memory making generated records");
        return;
    }
    self->emitted += (int64_t)n;
    unsigned char head[RAW_HEAD] = {RAW_MAGIC, 1};
    s_put_le(head + 2, first, 8);
    s_put_le(head + 10, n, 4);
    s_put_le(head + 14, core, 4);
    s_put_le(head + 18, observed, 8);
    struct iovec raw[2] = {{head, RAW_HEAD}, {self->packed.data, self->packed.size}};
    drv_node_emit_generated(node, records, n, raw, 2);
}

//  A kept batch made again, as it was, whatever the template is now.
static int s_replay(drv_node_t *node, const void *data, size_t size)
{
    const unsigned char *head = data;
    if (size <= RAW_HEAD || head[0] != RAW_MAGIC || head[1] != 1) {
        return -1;
    }
    size_t n = (size_t)s_get_le(head + 10, 4);
    msgpack_object tmpl;
    if (n == 0 || n > BATCH ||
        msgpack_unpack((const char *)head + RAW_HEAD, size - RAW_HEAD, NULL, drv_node_zone(node), &tmpl) !=
            MSGPACK_UNPACK_SUCCESS) {
        return -1;
    }
    msgpack_object *records =
        s_make(node, &tmpl, s_get_le(head + 2, 8), n, s_get_le(head + 14, 4), s_get_le(head + 18, 8));
    if (!records) {
        return -1;
    }
    drv_node_forward(node, records, n);
    return (int)n;
}

static int s_generate(drv_node_t *node, int64_t now_us, int64_t *wait_us)
{
    generator_t *self = node->state;
    *wait_us = -1;
    if (self->count > 0 && self->emitted >= self->count) {
        return 0; // finished
    }
    if (self->start_us == 0) {
        self->start_us = now_us;
    }
    int64_t due = BATCH;
    if (self->rate > 0) {
        due = (now_us - self->start_us) * self->rate / 1000000 + 1 - self->emitted;
    }
    if (self->count > 0 && due > self->count - self->emitted) {
        due = self->count - self->emitted;
    }
    if (due > BATCH) {
        due = BATCH;
    }
    if (due > 0) {
        s_emit(node, self, (size_t)due);
    }
    if (self->count > 0 && self->emitted >= self->count) {
        return due > 0 ? (int)due : 0;
    }
    *wait_us = 0;
    if (self->rate > 0) {
        int64_t next_us = self->start_us + self->emitted * 1000000 / self->rate;
        *wait_us = next_us > now_us ? next_us - now_us : 0;
    }
    return due > 0 ? (int)due : 0;
}

static void s_destroy(drv_node_t *node)
{
    generator_t *self = node->state;
    if (self) {
        msgpack_sbuffer_destroy(&self->packed);
        free(self);
    }
}

const drv_node_kind_t drv_receiver_generator = {
    .schema = &drv_schema_receiver_generator,
    .init = s_init,
    .generate = s_generate,
    .replay = s_replay,
    .destroy = s_destroy,
};
