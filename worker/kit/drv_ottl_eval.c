/*  drv_ottl_eval — see drv_ottl_eval.h. */
#include "drv_ottl_eval.h"
#include "drv_ottl_value.h"
#include "drv_regex.h"
#include "drv_schemas.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const drv_ottl_value_t s_nil = {.type = DRV_OTTL_V_NIL};

void drv_ottl_fail(drv_ottl_ctx_t *e, const char *fmt, const char *what)
{
    if (!e->failed) {
        e->failed = true;
        snprintf(e->why, e->whylen, fmt, what);
    }
}

drv_ottl_value_t drv_ottl_of(const msgpack_object *o)
{
    if (!o) {
        return s_nil;
    }
    switch (o->type) {
    case MSGPACK_OBJECT_BOOLEAN:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL, .b = o->via.boolean};
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_INT,
                                  .i = o->via.u64 > INT64_MAX ? INT64_MAX : (int64_t)o->via.u64};
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_INT, .i = o->via.i64};
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_FLOAT, .f = o->via.f64};
    case MSGPACK_OBJECT_STR:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_STR, .s = o->via.str.ptr, .len = o->via.str.size};
    case MSGPACK_OBJECT_BIN:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_STR, .s = o->via.bin.ptr, .len = o->via.bin.size};
    case MSGPACK_OBJECT_MAP:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_MAP, .o = o};
    case MSGPACK_OBJECT_ARRAY:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_LIST, .o = o};
    default:
        return s_nil;
    }
}

//  What the path leads to in the record, or NULL.
const msgpack_object *drv_ottl_at(const drv_ottl_node_t *node, const msgpack_object *at)
{
    for (int k = node->cache ? 1 : 0; at && k < node->depth; k++) { // cache[...]: at is the cache
        const drv_ottl_key_t *key = &node->keys[k];
        const msgpack_object *next = NULL;
        if (key->key && at->type == MSGPACK_OBJECT_MAP) {
            for (uint32_t i = 0; i < at->via.map.size && !next; i++) {
                const msgpack_object *name = &at->via.map.ptr[i].key;
                if (name->type == MSGPACK_OBJECT_STR && name->via.str.size == key->len &&
                    !memcmp(name->via.str.ptr, key->key, key->len)) {
                    next = &at->via.map.ptr[i].val;
                }
            }
        } else if (!key->key && at->type == MSGPACK_OBJECT_ARRAY) {
            int64_t i = key->index < 0 ? (int64_t)at->via.array.size + key->index : key->index;
            next = i >= 0 && i < (int64_t)at->via.array.size ? &at->via.array.ptr[i] : NULL;
        }
        at = next;
    }
    return at;
}

//  A value as text, as String() says it (into the zone when it is made).
bool drv_ottl_text(drv_ottl_ctx_t *e, drv_ottl_value_t v, const char **s, size_t *len)
{
    char buf[64];
    switch (v.type) {
    case DRV_OTTL_V_STR:
        *s = v.s, *len = v.len;
        return true;
    case DRV_OTTL_V_BOOL:
        *s = v.b ? "true" : "false", *len = v.b ? 4 : 5;
        return true;
    case DRV_OTTL_V_INT:
        snprintf(buf, sizeof buf, "%" PRId64, v.i);
        break;
    case DRV_OTTL_V_FLOAT:
        snprintf(buf, sizeof buf, "%.17g", v.f);
        break;
    default:
        return false; // nil, maps and lists are no text here
    }
    size_t n = strlen(buf);
    char *copy = msgpack_zone_malloc(e->zone, n + 1);
    if (!copy) {
        drv_ottl_fail(e, "%s", "out of memory");
        return false;
    }
    memcpy(copy, buf, n + 1);
    *s = copy, *len = n;
    return true;
}

static int s_compare_numbers(double x, double y)
{
    return x < y ? -1 : x > y;
}

//  OTTL's comparison of a and b by op.
static bool s_compare(drv_ottl_value_t a, drv_ottl_op_t op, drv_ottl_value_t b)
{
    bool numbers = (a.type == DRV_OTTL_V_INT || a.type == DRV_OTTL_V_FLOAT) &&
                   (b.type == DRV_OTTL_V_INT || b.type == DRV_OTTL_V_FLOAT);
    int order = 0;
    bool ordered = true, equal;
    if (numbers) {
        order = a.type == DRV_OTTL_V_INT && b.type == DRV_OTTL_V_INT
                    ? (a.i > b.i) - (a.i < b.i)
                    : s_compare_numbers(a.type == DRV_OTTL_V_INT ? (double)a.i : a.f,
                                        b.type == DRV_OTTL_V_INT ? (double)b.i : b.f);
        equal = order == 0;
    } else if (a.type == DRV_OTTL_V_STR && b.type == DRV_OTTL_V_STR) {
        int c = memcmp(a.s, b.s, a.len < b.len ? a.len : b.len);
        order = c ? (c > 0) - (c < 0) : (a.len > b.len) - (a.len < b.len);
        equal = order == 0;
    } else if (a.type != b.type) {
        equal = false, ordered = false;
    } else if (a.type == DRV_OTTL_V_NIL) {
        equal = true, ordered = false;
    } else if (a.type == DRV_OTTL_V_BOOL) {
        equal = a.b == b.b, ordered = false;
    } else {
        equal = msgpack_object_equal(*a.o, *b.o), ordered = false;
    }
    switch (op) {
    case DRV_OTTL_EQ:
        return equal;
    case DRV_OTTL_NE:
        return !equal;
    case DRV_OTTL_LT:
        return ordered && order < 0;
    case DRV_OTTL_LE:
        return ordered && order <= 0;
    case DRV_OTTL_GT:
        return ordered && order > 0;
    default:
        return ordered && order >= 0;
    }
}

bool drv_ottl_truth(drv_ottl_ctx_t *e, drv_ottl_value_t v, const drv_ottl_node_t *node)
{
    if (v.type != DRV_OTTL_V_BOOL) {
        drv_ottl_fail(e, "%s is not true or false", node->kind == DRV_OTTL_PATH ? "a path's value" : "a value");
        return false;
    }
    return v.b;
}

static drv_ottl_value_t s_string(drv_ottl_ctx_t *e, const char *s, size_t len)
{
    (void)e;
    return (drv_ottl_value_t){.type = DRV_OTTL_V_STR, .s = s, .len = len};
}

static drv_ottl_value_t s_call(drv_ottl_ctx_t *e, const drv_ottl_node_t *node)
{
    drv_ottl_value_t a = node->nargs == 0 || node->args[0]->kind == DRV_OTTL_LIST
                             ? s_nil // Now(); Concat's list is read below
                             : drv_ottl_value(e, node->args[0]);
    const char *s;
    size_t len;
    switch (node->function) {
    case DRV_OTTL_IS_MATCH: {
        if (a.type == DRV_OTTL_V_NIL) {
            return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL, .b = false};
        }
        if (!drv_ottl_text(e, a, &s, &len)) {
            drv_ottl_fail(e, "%s", "IsMatch's target is a map or a list");
            return s_nil;
        }
        int rc = pcre2_match(node->compiled, (PCRE2_SPTR)s, len, 0, 0, e->data, e->match);
        if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
            drv_ottl_fail(e, "%s",
                          rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT
                              ? "IsMatch: the match went past its bounds (docs/security.md)"
                              : "IsMatch: the match failed");
            return s_nil;
        }
        return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL, .b = rc >= 0};
    }
    case DRV_OTTL_IS_STRING:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL, .b = a.type == DRV_OTTL_V_STR};
    case DRV_OTTL_IS_MAP:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL, .b = a.type == DRV_OTTL_V_MAP};
    case DRV_OTTL_IS_LIST:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL, .b = a.type == DRV_OTTL_V_LIST};
    case DRV_OTTL_IS_INT:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL, .b = a.type == DRV_OTTL_V_INT};
    case DRV_OTTL_IS_DOUBLE:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL, .b = a.type == DRV_OTTL_V_FLOAT};
    case DRV_OTTL_IS_BOOL:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL, .b = a.type == DRV_OTTL_V_BOOL};
    case DRV_OTTL_LEN:
        if (a.type == DRV_OTTL_V_STR) {
            return (drv_ottl_value_t){.type = DRV_OTTL_V_INT, .i = (int64_t)a.len};
        }
        if (a.type == DRV_OTTL_V_MAP || a.type == DRV_OTTL_V_LIST) {
            return (drv_ottl_value_t){.type = DRV_OTTL_V_INT,
                                      .i = a.type == DRV_OTTL_V_MAP ? (int64_t)a.o->via.map.size
                                                                    : (int64_t)a.o->via.array.size};
        }
        drv_ottl_fail(e, "%s", "Len takes a string, a map or a list");
        return s_nil;
    case DRV_OTTL_INT_OF: // as the Collector's Int: nil for what is no number
        if (a.type == DRV_OTTL_V_INT || a.type == DRV_OTTL_V_BOOL) {
            return (drv_ottl_value_t){.type = DRV_OTTL_V_INT, .i = a.type == DRV_OTTL_V_INT ? a.i : a.b};
        }
        if (a.type == DRV_OTTL_V_FLOAT && isfinite(a.f)) {
            return (drv_ottl_value_t){.type = DRV_OTTL_V_INT, .i = (int64_t)a.f};
        }
        if (a.type == DRV_OTTL_V_STR) {
            char buf[64];
            snprintf(buf, sizeof buf, "%.*s", (int)(a.len < 63 ? a.len : 63), a.s);
            char *end;
            long long n = strtoll(buf, &end, 10);
            return *buf && !*end ? (drv_ottl_value_t){.type = DRV_OTTL_V_INT, .i = n} : s_nil;
        }
        return s_nil;
    case DRV_OTTL_DOUBLE_OF:
        if (a.type == DRV_OTTL_V_INT || a.type == DRV_OTTL_V_FLOAT || a.type == DRV_OTTL_V_BOOL) {
            return (drv_ottl_value_t){.type = DRV_OTTL_V_FLOAT,
                                      .f = a.type == DRV_OTTL_V_INT     ? (double)a.i
                                           : a.type == DRV_OTTL_V_FLOAT ? a.f
                                                                        : a.b};
        }
        if (a.type == DRV_OTTL_V_STR) {
            char buf[64];
            snprintf(buf, sizeof buf, "%.*s", (int)(a.len < 63 ? a.len : 63), a.s);
            char *end;
            double f = strtod(buf, &end);
            return *buf && !*end ? (drv_ottl_value_t){.type = DRV_OTTL_V_FLOAT, .f = f} : s_nil;
        }
        return s_nil;
    case DRV_OTTL_STRING_OF:
        return drv_ottl_text(e, a, &s, &len) ? s_string(e, s, len) : s_nil;
    case DRV_OTTL_HAS_PREFIX:
    case DRV_OTTL_HAS_SUFFIX: {
        drv_ottl_value_t p = drv_ottl_value(e, node->args[1]);
        if (a.type != DRV_OTTL_V_STR || p.type != DRV_OTTL_V_STR) {
            return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL, .b = false};
        }
        bool fits = p.len <= a.len;
        const char *from = node->function == DRV_OTTL_HAS_PREFIX ? a.s : a.s + a.len - (fits ? p.len : 0);
        return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL, .b = fits && !memcmp(from, p.s, p.len)};
    }
    default: // those that make what they give
        return drv_ottl_make(e, node, a);
        return s_nil;
    }
}

drv_ottl_value_t drv_ottl_value(drv_ottl_ctx_t *e, const drv_ottl_node_t *node)
{
    if (e->failed) {
        return s_nil;
    }
    switch (node->kind) {
    case DRV_OTTL_NIL:
        return s_nil;
    case DRV_OTTL_BOOL:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL, .b = node->boolean};
    case DRV_OTTL_INT:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_INT, .i = node->integer};
    case DRV_OTTL_FLOAT:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_FLOAT, .f = node->number};
    case DRV_OTTL_STRING:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_STR, .s = node->string, .len = node->len};
    case DRV_OTTL_PATH:
        return drv_ottl_of(drv_ottl_at(node, node->cache ? e->cache : e->record));
    case DRV_OTTL_CALL: {
        drv_ottl_value_t v = s_call(e, node);
        if (node->depth > 0 && (v.type == DRV_OTTL_V_MAP || v.type == DRV_OTTL_V_LIST)) {
            return drv_ottl_of(drv_ottl_at(node, v.o)); // Converter(...)["key"]
        }
        return v;
    }
    case DRV_OTTL_NOT:
        return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL,
                                  .b = !drv_ottl_truth(e, drv_ottl_value(e, node->args[0]), node->args[0])};
    case DRV_OTTL_AND: // as the Collector: the right side only when the left did not decide
        if (!drv_ottl_truth(e, drv_ottl_value(e, node->args[0]), node->args[0])) {
            return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL, .b = false};
        }
        return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL,
                                  .b = drv_ottl_truth(e, drv_ottl_value(e, node->args[1]), node->args[1])};
    case DRV_OTTL_OR:
        if (drv_ottl_truth(e, drv_ottl_value(e, node->args[0]), node->args[0])) {
            return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL, .b = true};
        }
        return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL,
                                  .b = drv_ottl_truth(e, drv_ottl_value(e, node->args[1]), node->args[1])};
    case DRV_OTTL_CMP: {
        drv_ottl_value_t a = drv_ottl_value(e, node->args[0]), b = drv_ottl_value(e, node->args[1]);
        return (drv_ottl_value_t){.type = DRV_OTTL_V_BOOL, .b = s_compare(a, node->op, b)};
    }
    default:
        drv_ottl_fail(e, "%s", "a list is no condition");
        return s_nil;
    }
}

int drv_ottl_condition_init(drv_ottl_condition_t *self, const char *text, char *err, size_t errlen)
{
    memset(self, 0, sizeof *self);
    if (drv_ottl_compile(text, false, &self->root, err, errlen) != 0) {
        drv_ottl_condition_fini(self);
        return -1;
    }
    self->match = drv_regex_context();
    self->data = pcre2_match_data_create(1, NULL);
    self->zone_ready = msgpack_zone_init(&self->zone, 4096);
    if (!self->match || !self->data || !self->zone_ready) {
        snprintf(err, errlen, "out of memory");
        drv_ottl_condition_fini(self);
        return -1;
    }
    return 0;
}

void drv_ottl_condition_fini(drv_ottl_condition_t *self)
{
    drv_ottl_release(self->root);
    pcre2_match_context_free(self->match);
    pcre2_match_data_free(self->data);
    if (self->zone_ready) {
        msgpack_zone_destroy(&self->zone);
    }
    memset(self, 0, sizeof *self);
}

int drv_ottl_condition_eval(drv_ottl_condition_t *self, const msgpack_object *record, char *why, size_t whylen)
{
    drv_ottl_ctx_t e = {
        .zone = &self->zone, .match = self->match, .data = self->data, .record = record, .why = why, .whylen = whylen};
    drv_ottl_value_t v = drv_ottl_value(&e, self->root);
    bool truth = e.failed ? false : drv_ottl_truth(&e, v, self->root);
    msgpack_zone_clear(&self->zone);
    return e.failed ? -1 : truth;
}
