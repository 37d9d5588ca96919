/*  drv_ottl_value — what an OTTL expression is worth on a record
    (drv_ottl_eval.c): conditions read them, statements (drv_ottl_edit.c)
    write them into the record. A value points into the record, the tree,
    or the scratch zone of the evaluation it came from. */
#ifndef DRV_OTTL_VALUE_H
#define DRV_OTTL_VALUE_H

#include "drover/drv_ottl.h"

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    DRV_OTTL_V_NIL,
    DRV_OTTL_V_BOOL,
    DRV_OTTL_V_INT,
    DRV_OTTL_V_FLOAT,
    DRV_OTTL_V_STR,
    DRV_OTTL_V_MAP,
    DRV_OTTL_V_LIST
} drv_ottl_vtype_t;

typedef struct {
    drv_ottl_vtype_t type;
    bool b;
    int64_t i;
    double f;
    const char *s;
    size_t len;
    const msgpack_object *o; // a map's or a list's object
} drv_ottl_value_t;

//  One evaluation: the record, where converters make what they make, the
//  regex match's context and data, and the first failure.
typedef struct {
    const msgpack_object *record;
    const msgpack_object *cache; // the statements' scratch map (cache[...]), or NULL
    msgpack_zone *zone;
    void *match; // pcre2_match_context
    void *data;  // pcre2_match_data
    char *why;
    size_t whylen;
    bool failed;
} drv_ottl_ctx_t;

drv_ottl_value_t drv_ottl_value(drv_ottl_ctx_t *ctx, const drv_ottl_node_t *node);
//  The value as a condition: its bool, or a failure when it is none.
bool drv_ottl_truth(drv_ottl_ctx_t *ctx, drv_ottl_value_t v, const drv_ottl_node_t *node);
//  A msgpack object's value (NULL: nil).
drv_ottl_value_t drv_ottl_of(const msgpack_object *o);
//  What a path (node's keys) leads to from at, or NULL.
const msgpack_object *drv_ottl_at(const drv_ottl_node_t *node, const msgpack_object *at);
//  A scalar as text (strings as they are, numbers and bools written into the zone): false for nil, maps, lists.
bool drv_ottl_text(drv_ottl_ctx_t *ctx, drv_ottl_value_t v, const char **s, size_t *len);
//  A converter that makes what it gives (drv_ottl_make.c), a its first argument's value.
drv_ottl_value_t drv_ottl_make(drv_ottl_ctx_t *ctx, const drv_ottl_node_t *node, drv_ottl_value_t a);
//  The evaluation fails: fmt with what, kept in why (the first only).
void drv_ottl_fail(drv_ottl_ctx_t *ctx, const char *fmt, const char *what);

#endif
