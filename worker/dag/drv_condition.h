/*  drv_condition — one {field, op, value} test on a record: what
    processor:filter keeps and processor:route routes by. A record without
    the field matches no op (so exists matches exactly those that have it).
    Numbers compare as numbers whatever their msgpack type; strings byte by
    byte; other kinds only by equality. */
#ifndef DRV_CONDITION_H
#define DRV_CONDITION_H

#include "drv_node.h"
#include "drv_schemas.h"

#include <jansson.h>
#include <msgpack.h>
#include <stdbool.h>

typedef enum { DRV_OP_EQ, DRV_OP_NE, DRV_OP_LT, DRV_OP_LE, DRV_OP_GT, DRV_OP_GE, DRV_OP_EXISTS } drv_op_t;

typedef struct {
    drv_record_path_t field; // a top-level name, or a path into maps (docs/operations.md, "Record paths")
    drv_op_t op;
    msgpack_object value;
} drv_condition_t;

//  Builds a condition from its normalized JSON, its values living as long
//  as node's DAG. Returns 0 or -1.
int drv_condition_init(drv_condition_t *condition, drv_node_t *node, const json_t *when);
bool drv_condition_matches(const drv_condition_t *condition, const msgpack_object *record);

#endif
