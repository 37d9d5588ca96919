/*  receiver:generator — copies of a record at a rate, with seq (per
    instance, from 0) and core added: for demos, tests and benchmarks. */
#include "drv_node.h"
#include "drv_schemas.h"
#include "drv_record.h"

#include "drover/drv_limits.h"

#include <stdlib.h>

#define BATCH 64 // records per batch at most

typedef struct {
    int64_t rate;          // records/s, 0 = flat out
    int64_t count;         // records to emit, 0 = forever
    int64_t emitted;       // records emitted so far (also the next seq)
    int64_t start_us;      // when it started, for pacing
    msgpack_object record; // the template
} generator_t;

static const msgpack_object s_key_seq = {.type = MSGPACK_OBJECT_STR, .via.str = {3, "seq"}};
static const msgpack_object s_key_core = {.type = MSGPACK_OBJECT_STR, .via.str = {4, "core"}};

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    generator_t *self = calloc(1, sizeof *self);
    node->state = self;
    self->rate = json_integer_value(json_object_get(config, "rate"));
    self->count = json_integer_value(json_object_get(config, "count"));
    json_t *record = json_object_get(config, "record");
    json_t *empty = json_object();
    int rc = drv_node_object(node, record ? record : empty, &self->record);
    json_decref(empty);
    if (rc != 0) {
        snprintf(err, errlen, "node %s: cannot encode record", node->id);
        return -1;
    }
    return 0;
}

static void s_emit(drv_node_t *node, generator_t *self, size_t n)
{
    msgpack_object *records = drv_node_alloc(node, n * sizeof *records);
    const msgpack_object_kv *tmpl = self->record.via.map.ptr;
    size_t tmpl_size = self->record.via.map.size;
    uint64_t core = (uint64_t)drv_node_identity(node)->core;
    for (size_t i = 0; i < n; i++) {
        msgpack_object_kv *kv = drv_node_alloc(node, (tmpl_size + 2) * sizeof *kv);
        size_t count = 0;
        for (size_t k = 0; k < tmpl_size; k++) {
            if (!drv_record_same_key(&tmpl[k].key, &s_key_seq) && !drv_record_same_key(&tmpl[k].key, &s_key_core)) {
                kv[count++] = tmpl[k];
            }
        }
        kv[count].key = s_key_seq;
        kv[count].val.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
        kv[count++].val.via.u64 = (uint64_t)self->emitted++;
        kv[count].key = s_key_core;
        kv[count].val.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
        kv[count++].val.via.u64 = core;
        records[i].type = MSGPACK_OBJECT_MAP;
        records[i].via.map.ptr = kv;
        records[i].via.map.size = (uint32_t)count;
    }
    drv_node_emit_generated(node, records, n);
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

const drv_node_kind_t drv_receiver_generator = {
    .schema = &drv_schema_receiver_generator,
    .init = s_init,
    .generate = s_generate,
};
