/*  drv_ottl_eval — an OTTL condition (drover/drv_ottl.h's tree) evaluated
    on a record where it lies, as a msgpack map: nothing is built for a
    record the condition only reads (docs/ottl.md). IsMatch's patterns are
    PCRE2, compiled once (JIT), matched under drv_regex's bounds: a match
    past them is an error of the record, never a stall. Comparisons are
    OTTL's: numbers as numbers whatever their type, strings byte by byte,
    nil equal to nil (and to a path that leads nowhere), anything else of
    two types unequal and neither less nor greater. */
#ifndef DRV_OTTL_EVAL_H
#define DRV_OTTL_EVAL_H

#include "drover/drv_ottl.h"

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    drv_ottl_node_t *root;
    void *match; // pcre2_match_context, pcre2_match_data: one of each for every regex
    void *data;
    msgpack_zone zone; // what converters make while one record is evaluated
    bool zone_ready;
} drv_ottl_condition_t;

//  Parses and compiles text: 0, or -1 with what is wrong (and where) in err.
int drv_ottl_condition_init(drv_ottl_condition_t *self, const char *text, char *err, size_t errlen);
void drv_ottl_condition_fini(drv_ottl_condition_t *self);
//  1 when record meets the condition, 0 when not, -1 when evaluating it
//  failed (a regex past its bounds, a converter given what it cannot take),
//  with why.
int drv_ottl_condition_eval(drv_ottl_condition_t *self, const msgpack_object *record, char *why, size_t whylen);

#endif
