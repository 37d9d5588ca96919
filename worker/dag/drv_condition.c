/*  drv_condition — see drv_condition.h. */
#include "drv_condition.h"
#include "drv_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int drv_condition_init(drv_condition_t *self, drv_node_t *node, const json_t *when, char *err, size_t errlen)
{
    memset(self, 0, sizeof *self);
    if (json_is_string(when)) {
        self->ottl = calloc(1, sizeof *self->ottl);
        if (!self->ottl || drv_ottl_condition_init(self->ottl, json_string_value(when), err, errlen) != 0) {
            free(self->ottl);
            self->ottl = NULL;
            return -1;
        }
        return 0;
    }
    snprintf(err, errlen, "cannot encode the condition");
    const char *op = json_string_value(json_object_get(when, "op"));
    self->op = DRV_OP_EQ;
    for (int i = 0; i < (int)(sizeof drv_condition_ops / sizeof drv_condition_ops[0]); i++) {
        if (op && strcmp(op, drv_condition_ops[i]) == 0) {
            self->op = (drv_op_t)i;
        }
    }
    json_t *value = json_object_get(when, "value");
    return drv_node_path(node, json_string_value(json_object_get(when, "field")), &self->field) ||
                   (value && drv_node_object(node, value, &self->value))
               ? -1
               : 0;
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

void drv_condition_fini(drv_condition_t *self)
{
    if (self->ottl) {
        drv_ottl_condition_fini(self->ottl);
        free(self->ottl);
        self->ottl = NULL;
    }
}

int drv_condition_test(const drv_condition_t *self, const msgpack_object *record, char *why, size_t whylen)
{
    if (self->ottl) {
        return drv_ottl_condition_eval(self->ottl, record, why, whylen);
    }
    return drv_condition_matches(self, record);
}

bool drv_condition_matches(const drv_condition_t *self, const msgpack_object *record)
{
    if (self->ottl) {
        char why[200];
        return drv_ottl_condition_eval(self->ottl, record, why, sizeof why) == 1;
    }
    const msgpack_object *found = drv_record_path_get(record, &self->field);
    if (!found) {
        return false; // a record without the field matches no op
    }
    if (self->op == DRV_OP_EXISTS) {
        return true;
    }
    int cmp = 0;
    bool ordered = false;
    bool comparable = s_compare(found, &self->value, &cmp, &ordered);
    switch (self->op) {
    case DRV_OP_EQ:
        return comparable && cmp == 0;
    case DRV_OP_NE:
        return !(comparable && cmp == 0);
    case DRV_OP_LT:
        return comparable && ordered && cmp < 0;
    case DRV_OP_LE:
        return comparable && ordered && cmp <= 0;
    case DRV_OP_GT:
        return comparable && ordered && cmp > 0;
    case DRV_OP_GE:
        return comparable && ordered && cmp >= 0;
    default:
        return false;
    }
}
