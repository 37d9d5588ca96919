/*  processor:filter — keeps the records whose field compares with value by
    op. A record without the field matches no op (so exists keeps exactly
    those that have it). Numbers compare as numbers whatever their msgpack
    type; strings byte by byte; other kinds only by equality. */
#include "drv_node.h"
#include "drv_record.h"

#include <stdlib.h>
#include <string.h>

typedef enum { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_EXISTS } filter_op_t;

static const char *s_ops[] = {"eq", "ne", "lt", "le", "gt", "ge", "exists"};

typedef struct {
    msgpack_object field;
    filter_op_t op;
    msgpack_object value;
} filter_t;

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    json_t *op = json_object_get(config, "op");
    bool needs_value = !(json_is_string(op) && strcmp(json_string_value(op), "exists") == 0);
    if (needs_value && !json_object_get(config, "value")) {
        char path[300];
        snprintf(path, sizeof path, "%s.config.value", node_path);
        drv_spec_check_problem(check, path, "required unless op is exists");
    }
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    filter_t *self = calloc(1, sizeof *self);
    node->state = self;
    const char *op = json_string_value(json_object_get(config, "op"));
    for (int i = 0; i < (int)(sizeof s_ops / sizeof s_ops[0]); i++) {
        if (op && strcmp(op, s_ops[i]) == 0) {
            self->op = (filter_op_t)i;
        }
    }
    json_t *value = json_object_get(config, "value");
    if (drv_node_string_object(node, json_string_value(json_object_get(config, "field")), &self->field) ||
        (value && drv_node_object(node, value, &self->value))) {
        snprintf(err, errlen, "node %s: cannot encode filter", node->id);
        return -1;
    }
    return 0;
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
    if ((a->type == MSGPACK_OBJECT_STR || a->type == MSGPACK_OBJECT_BIN) && b->type == MSGPACK_OBJECT_STR) {
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

static bool s_matches(const filter_t *self, const msgpack_object *record)
{
    int index = drv_record_find(record->via.map.ptr, record->via.map.size, &self->field);
    if (index < 0) {
        return false; // a record without the field matches no op
    }
    if (self->op == OP_EXISTS) {
        return true;
    }
    int cmp = 0;
    bool ordered = false;
    bool comparable = s_compare(&record->via.map.ptr[index].val, &self->value, &cmp, &ordered);
    switch (self->op) {
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

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    msgpack_object *kept = drv_node_alloc(node, (n ? n : 1) * sizeof *kept);
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (s_matches(node->state, &records[i])) {
            kept[count++] = records[i];
        }
    }
    if (count > 0) {
        drv_node_forward(node, kept, count);
    }
}

const drv_node_kind_t drv_processor_filter = {
    .schema = {.name = "processor:filter",
               .role = DRV_ROLE_PROCESSOR,
               .keys = {{"field", DRV_KEY_STRING, true, NULL, NULL, 0},
                        {"op", DRV_KEY_CHOICE, true, NULL, "eq ne lt le gt ge exists", 0},
                        {"value", DRV_KEY_ANY, false, NULL, NULL, 0}},
               .check = s_check},
    .init = s_init,
    .run = s_run,
};
