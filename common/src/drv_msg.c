/*  drv_msg — table-driven codec for the control protocol (schemas/control.md).
    One table says which fields each message type requires or allows; encode and
    decode both follow it, so adding a message is one row, not two functions. */
#include "drover/drv_msg.h"
#include "drover/drv_mpcheck.h"
#include "drv_mpjson_internal.h"
#include "drover/drv_mpjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { KIND_STR, KIND_INT, KIND_BOOL, KIND_JSON } field_kind_t;

typedef struct {
    const char *name;
    field_kind_t kind;
    size_t offset;
} field_def_t;

#define STR(f)                                                                                                         \
    {                                                                                                                  \
#f, KIND_STR, offsetof(drv_msg_t, f)                                                                           \
    }
#define INT(f)                                                                                                         \
    {                                                                                                                  \
#f, KIND_INT, offsetof(drv_msg_t, f)                                                                           \
    }
#define BOOL(f)                                                                                                        \
    {                                                                                                                  \
#f, KIND_BOOL, offsetof(drv_msg_t, f)                                                                          \
    }
#define JSON(f)                                                                                                        \
    {                                                                                                                  \
#f, KIND_JSON, offsetof(drv_msg_t, f)                                                                          \
    }

//  Indexed by drv_msg_field_t.
static const field_def_t s_fields[DRV_F_COUNT] = {
    STR(role),         STR(instance),      STR(pipeline),   STR(node),       STR(endpoint),
    STR(reason),       STR(data_endpoint), INT(pid),        INT(generation), INT(core),
    INT(heartbeat_ms), INT(credit_window), INT(n),          INT(records_in), INT(records_out),
    INT(errors),       INT(batches),       BOOL(ok),        BOOL(reset),     JSON(spec),
    JSON(receivers),   BOOL(synced),       JSON(nodes),     STR(buffer_dir), JSON(buffer),
    INT(acked),        INT(ring_fd),       INT(ring_bytes), STR(run_dir),    INT(sync_id),
};

#define B(f) (1u << (f))
_Static_assert(DRV_F_COUNT <= 32, "a field is a bit of drv_msg_t.present");

typedef struct {
    const char *name;
    uint32_t required;
    uint32_t optional;
} type_def_t;

//  Indexed by drv_msg_type_t.
static const type_def_t s_types[DRV_MSG_TYPE_COUNT] = {
    {"hello", B(DRV_F_ROLE) | B(DRV_F_PID), B(DRV_F_INSTANCE)},
    {"spec",
     B(DRV_F_INSTANCE) | B(DRV_F_PIPELINE) | B(DRV_F_GENERATION) | B(DRV_F_CORE) | B(DRV_F_SPEC) |
         B(DRV_F_HEARTBEAT_MS) | B(DRV_F_CREDIT_WINDOW) | B(DRV_F_DATA_ENDPOINT),
     B(DRV_F_BUFFER_DIR) | B(DRV_F_RUN_DIR)},
    {"ready", B(DRV_F_INSTANCE), 0},
    {"init_failed", B(DRV_F_INSTANCE) | B(DRV_F_REASON), 0},
    {"heartbeat", B(DRV_F_INSTANCE),
     B(DRV_F_RECORDS_IN) | B(DRV_F_RECORDS_OUT) | B(DRV_F_ERRORS) | B(DRV_F_BATCHES) | B(DRV_F_NODES) |
         B(DRV_F_BUFFER)},
    {"drain", 0, 0},
    {"drained", B(DRV_F_INSTANCE) | B(DRV_F_RECORDS_IN) | B(DRV_F_RECORDS_OUT) | B(DRV_F_ERRORS),
     B(DRV_F_NODES) | B(DRV_F_BUFFER)},
    {"pipeline_set", B(DRV_F_PIPELINE) | B(DRV_F_RECEIVERS), 0},
    {"pipeline_del", B(DRV_F_PIPELINE), 0},
    {"instance_add", B(DRV_F_PIPELINE) | B(DRV_F_INSTANCE), B(DRV_F_RECEIVERS)},
    {"instance_drain", B(DRV_F_PIPELINE) | B(DRV_F_INSTANCE), 0},
    {"instance_del", B(DRV_F_PIPELINE) | B(DRV_F_INSTANCE), 0},
    {"bound", B(DRV_F_PIPELINE) | B(DRV_F_NODE) | B(DRV_F_ENDPOINT) | B(DRV_F_OK), B(DRV_F_REASON)},
    {"credit", B(DRV_F_N) | B(DRV_F_RESET),
     B(DRV_F_SYNCED) | B(DRV_F_ACKED) | B(DRV_F_PID) | B(DRV_F_RING_FD) | B(DRV_F_RING_BYTES) | B(DRV_F_SYNC_ID)},
    {"batch", B(DRV_F_NODE), 0},
    {"sync", 0, B(DRV_F_SYNC_ID)},
    {"tap", B(DRV_F_NODES) | B(DRV_F_N), 0},
    {"tapped", B(DRV_F_INSTANCE) | B(DRV_F_NODES), 0},
    {"ring", 0, 0},
};

const char *drv_msg_type_name(drv_msg_type_t type)
{
    return type < DRV_MSG_TYPE_COUNT ? s_types[type].name : "?";
}

void drv_msg_init(drv_msg_t *msg, drv_msg_type_t type)
{
    memset(msg, 0, sizeof *msg);
    msg->type = type;
}

void drv_msg_clear(drv_msg_t *msg)
{
    for (int f = 0; f < DRV_F_COUNT; f++) {
        void *slot = (char *)msg + s_fields[f].offset;
        if (s_fields[f].kind == KIND_STR) {
            free(*(char **)slot);
        } else if (s_fields[f].kind == KIND_JSON) {
            json_decref(*(json_t **)slot);
        }
    }
    memset(msg, 0, sizeof *msg);
}

void drv_msg_set_str(drv_msg_t *msg, drv_msg_field_t field, const char *value)
{
    char **slot = (char **)((char *)msg + s_fields[field].offset);
    free(*slot);
    *slot = strdup(value ? value : "");
    msg->present |= B(field);
}

void drv_msg_set_int(drv_msg_t *msg, drv_msg_field_t field, int64_t value)
{
    *(int64_t *)((char *)msg + s_fields[field].offset) = value;
    msg->present |= B(field);
}

void drv_msg_set_bool(drv_msg_t *msg, drv_msg_field_t field, bool value)
{
    *(bool *)((char *)msg + s_fields[field].offset) = value;
    msg->present |= B(field);
}

void drv_msg_set_json(drv_msg_t *msg, drv_msg_field_t field, json_t *value)
{
    json_t **slot = (json_t **)((char *)msg + s_fields[field].offset);
    json_decref(*slot);
    *slot = json_incref(value);
    msg->present |= B(field);
}

bool drv_msg_has(const drv_msg_t *msg, drv_msg_field_t field)
{
    return (msg->present & B(field)) != 0;
}

static int s_pack_str(msgpack_packer *pk, const char *s)
{
    size_t len = strlen(s);
    return msgpack_pack_str(pk, len) || msgpack_pack_str_body(pk, s, len);
}

int drv_msg_encode(const drv_msg_t *msg, char **data, size_t *size)
{
    if (msg->type >= DRV_MSG_TYPE_COUNT) {
        return -1;
    }
    const type_def_t *def = &s_types[msg->type];
    if ((msg->present & def->required) != def->required) {
        return -1;
    }
    uint32_t fields = msg->present & (def->required | def->optional);
    msgpack_sbuffer sbuf;
    msgpack_sbuffer_init(&sbuf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
    int rc = msgpack_pack_map(&pk, 2 + __builtin_popcount(fields));
    rc |= s_pack_str(&pk, "v") || msgpack_pack_int(&pk, DRV_MSG_VERSION);
    rc |= s_pack_str(&pk, "type") || s_pack_str(&pk, def->name);
    for (int f = 0; f < DRV_F_COUNT && rc == 0; f++) {
        if (!(fields & B(f))) {
            continue;
        }
        const void *slot = (const char *)msg + s_fields[f].offset;
        rc |= s_pack_str(&pk, s_fields[f].name);
        switch (s_fields[f].kind) {
        case KIND_STR:
            rc |= s_pack_str(&pk, *(char *const *)slot ? *(char *const *)slot : "");
            break;
        case KIND_INT:
            rc |= msgpack_pack_int64(&pk, *(const int64_t *)slot);
            break;
        case KIND_BOOL:
            rc |= *(const bool *)slot ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk);
            break;
        case KIND_JSON: {
            json_t *value = *(json_t *const *)slot;
            rc |= value ? drv_mpjson_pack(&pk, value) : msgpack_pack_nil(&pk);
            break;
        }
        }
    }
    if (rc != 0) {
        msgpack_sbuffer_destroy(&sbuf);
        return -1;
    }
    *size = sbuf.size;
    *data = msgpack_sbuffer_release(&sbuf);
    return 0;
}

static bool s_str_eq(const msgpack_object *obj, const char *s)
{
    size_t len = strlen(s);
    return obj->type == MSGPACK_OBJECT_STR && obj->via.str.size == len &&
           (len == 0 || memcmp(obj->via.str.ptr, s, len) == 0); // empty: ptr may be NULL
}

static int s_decode_field(drv_msg_t *msg, int f, const msgpack_object *val, char *err, size_t errlen)
{
    void *slot = (char *)msg + s_fields[f].offset;
    switch (s_fields[f].kind) {
    case KIND_STR:
        if (val->type != MSGPACK_OBJECT_STR) {
            snprintf(err, errlen, "field %s: expected a string", s_fields[f].name);
            return -2;
        }
        free(*(char **)slot);
        //  Not strndup: the bytes sit in the frame, with no NUL after them.
        char *copy = malloc(val->via.str.size + 1);
        if (val->via.str.size > 0) {
            memcpy(copy, val->via.str.ptr, val->via.str.size);
        }
        copy[val->via.str.size] = 0;
        *(char **)slot = copy;
        break;
    case KIND_INT:
        if (val->type == MSGPACK_OBJECT_POSITIVE_INTEGER && val->via.u64 <= (uint64_t)INT64_MAX) {
            *(int64_t *)slot = (int64_t)val->via.u64;
        } else if (val->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
            *(int64_t *)slot = val->via.i64;
        } else {
            snprintf(err, errlen, "field %s: expected an integer", s_fields[f].name);
            return -2;
        }
        break;
    case KIND_BOOL:
        if (val->type != MSGPACK_OBJECT_BOOLEAN) {
            snprintf(err, errlen, "field %s: expected a boolean", s_fields[f].name);
            return -2;
        }
        *(bool *)slot = val->via.boolean;
        break;
    case KIND_JSON: {
        char why[300] = "";
        json_t *value = drv_mpjson_from_object(val, s_fields[f].name, why, sizeof why);
        if (!value) {
            snprintf(err, errlen, "field %s", why);
            return -2;
        }
        json_decref(*(json_t **)slot);
        *(json_t **)slot = value;
        break;
    }
    }
    msg->present |= B(f);
    return 0;
}

int drv_msg_decode(drv_msg_t *msg, const void *data, size_t size, char *err, size_t errlen)
{
    drv_msg_init(msg, DRV_MSG_TYPE_COUNT);
    msgpack_zone zone;
    if (!msgpack_zone_init(&zone, 1024)) {
        snprintf(err, errlen, "out of memory");
        return -2;
    }
    msgpack_object root;
    size_t offset = 0;
    int rc = -2;
    if (drv_mpcheck(data, size, err, errlen) != 0) {
        goto done;
    }
    if (msgpack_unpack(data, size, &offset, &zone, &root) != MSGPACK_UNPACK_SUCCESS) {
        snprintf(err, errlen, "malformed msgpack");
        goto done;
    }
    if (root.type != MSGPACK_OBJECT_MAP) {
        snprintf(err, errlen, "message is not a map");
        goto done;
    }
    //  First pass: version and type, which decide what the other keys mean.
    int64_t version = -1;
    for (uint32_t i = 0; i < root.via.map.size; i++) {
        const msgpack_object_kv *kv = &root.via.map.ptr[i];
        if (s_str_eq(&kv->key, "v") && kv->val.type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
            version = (int64_t)kv->val.via.u64;
        } else if (s_str_eq(&kv->key, "type")) {
            for (int t = 0; t < DRV_MSG_TYPE_COUNT; t++) {
                if (s_str_eq(&kv->val, s_types[t].name)) {
                    msg->type = (drv_msg_type_t)t;
                }
            }
        }
    }
    if (version != DRV_MSG_VERSION) {
        snprintf(err, errlen, "missing or unsupported protocol version (want v=%d)", DRV_MSG_VERSION);
        goto done;
    }
    if (msg->type == DRV_MSG_TYPE_COUNT) {
        snprintf(err, errlen, "missing or unknown message type");
        goto done;
    }
    const type_def_t *def = &s_types[msg->type];
    for (uint32_t i = 0; i < root.via.map.size; i++) {
        const msgpack_object_kv *kv = &root.via.map.ptr[i];
        for (int f = 0; f < DRV_F_COUNT; f++) {
            if ((def->required | def->optional) & B(f) && s_str_eq(&kv->key, s_fields[f].name)) {
                if (s_decode_field(msg, f, &kv->val, err, errlen) != 0) {
                    goto done;
                }
            }
        }
    }
    uint32_t missing = def->required & ~msg->present;
    if (missing) {
        snprintf(err, errlen, "%s: missing field %s", def->name, s_fields[__builtin_ctz(missing)].name);
        goto done;
    }
    rc = 0;
done:
    msgpack_zone_destroy(&zone);
    if (rc != 0) {
        drv_msg_type_t type = msg->type;
        drv_msg_clear(msg);
        msg->type = type;
    }
    return rc;
}
