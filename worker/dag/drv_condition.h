/*  drv_condition — one test on a record: what processor:filter keeps (or
    drops) and processor:route routes by. Either an OTTL condition in a
    string (drv_ottl_eval.h, docs/ottl.md), or a {field, op, value} map: a
    record without the field matches no op (so exists matches exactly those
    that have it); numbers compare as numbers whatever their msgpack type,
    strings byte by byte, other kinds only by equality. */
#ifndef DRV_CONDITION_H
#define DRV_CONDITION_H

#include "drv_node.h"
#include "drv_ottl_eval.h"
#include "drv_schemas.h"

#include <jansson.h>
#include <msgpack.h>
#include <stdbool.h>

typedef enum { DRV_OP_EQ, DRV_OP_NE, DRV_OP_LT, DRV_OP_LE, DRV_OP_GT, DRV_OP_GE, DRV_OP_EXISTS } drv_op_t;

typedef struct {
    drv_record_path_t field; // a top-level name, or a path into maps (docs/operations.md, "Record paths")
    drv_op_t op;
    msgpack_object value;
    drv_ottl_condition_t *ottl; // an OTTL condition, or NULL
} drv_condition_t;

//  Builds a condition from its normalized JSON (a map, or an OTTL
//  condition's string), its values living as long as node's DAG. Returns 0,
//  or -1 with the reason in err.
int drv_condition_init(drv_condition_t *condition, drv_node_t *node, const json_t *when, char *err, size_t errlen);
void drv_condition_fini(drv_condition_t *condition);
//  1 when record meets it, 0 when not, -1 when an OTTL condition could not
//  be evaluated on it (why says so).
int drv_condition_test(const drv_condition_t *condition, const msgpack_object *record, char *why, size_t whylen);
//  drv_condition_test == 1.
bool drv_condition_matches(const drv_condition_t *condition, const msgpack_object *record);

#endif
