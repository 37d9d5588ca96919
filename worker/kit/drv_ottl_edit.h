/*  drv_ottl_edit — an OTTL statement (an editor and its where) run on a
    record (docs/ottl.md, "Statements"): the record is never changed in
    place; what changes is built again in the zone given (the batch's), the
    rest shared, as drv_record_path does. */
#ifndef DRV_OTTL_EDIT_H
#define DRV_OTTL_EDIT_H

#include "drv_record_path.h"

#include "drover/drv_ottl.h"

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    drv_ottl_node_t *root;
    drv_record_path_t target; // the editor's first argument, as the record's keys
    void *match;              // pcre2_match_context
    void *data;               // pcre2_match_data
} drv_ottl_statement_t;

//  Parses and compiles text: 0, or -1 with what is wrong (and where) in err.
int drv_ottl_statement_init(drv_ottl_statement_t *self, const char *text, char *err, size_t errlen);
void drv_ottl_statement_fini(drv_ottl_statement_t *self);
//  Runs the statement on *record: 1 when it applied (*record, or *cache
//  for a target in cache[...], may be a new map in zone), 0 when its where
//  was not met, -1 when it failed (*record as it was, why says why). cache:
//  the statements' scratch map of this record (an empty map before the
//  first statement), or NULL (cache[...] reads nil, writes fail).
int drv_ottl_statement_run(drv_ottl_statement_t *self, msgpack_zone *zone, msgpack_object *record,
                           msgpack_object *cache, char *why, size_t whylen);

#endif
