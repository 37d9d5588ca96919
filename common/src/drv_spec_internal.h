/*  drv_spec_internal — what drv_spec.c, drv_spec_nodes.c and
    drv_spec_buffer.c share: the check under way, and how a problem is
    reported (drv_spec_check.c, below them all). Private to common/src. */
#ifndef DRV_SPEC_INTERNAL_H
#define DRV_SPEC_INTERNAL_H

#include "drover/drv_problems.h"
#include "drover/drv_spec.h"

//  One validation: where problems go, the prefix of their paths, and what
//  the spec is judged against.
struct drv_spec_check_t {
    drv_problems_t *problems;
    const char *prefix;
    const drv_spec_env_t *env;
};
typedef drv_spec_check_t ctx_t;

//  Problems are added with drv_spec_check_problem (drv_node_schema.h), at
//  prefix.path.

//  Validates the nodes map; returns it normalized (defaults filled in).
json_t *drv_spec_nodes(ctx_t *ctx, json_t *nodes);
//  Validates policies.buffer (drv_spec_buffer.c); returns it normalized, or
//  NULL (with problems) when it is not a map.
json_t *drv_spec_buffer(ctx_t *ctx, json_t *buffer);

#endif
