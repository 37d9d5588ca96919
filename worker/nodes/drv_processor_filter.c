/*  processor:filter — with `conditions` (OTTL, docs/ottl.md), drops the
    records that meet any of them, as the Collector's filter processor
    does; with field, op and value (drv_condition.h), keeps the records that
    match. A condition that cannot be evaluated on a record goes by
    error_mode: propagate (the record is counted in errors and handed on as
    it came), ignore (that condition is skipped, counted in errors), silent
    (skipped, not counted). Dropped records are counted as dropped. */
#include "drv_condition.h"
#include "drv_node.h"
#include "drv_schemas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { MODE_PROPAGATE, MODE_IGNORE, MODE_SILENT } error_mode_t;

typedef struct {
    drv_condition_t *conditions;
    size_t count;
    bool drop; // OTTL's: a record meeting one is dropped (else: one matching is kept)
    error_mode_t mode;
} filter_t;

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    filter_t *self = calloc(1, sizeof *self);
    node->state = self;
    if (!self) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    json_t *conditions = json_object_get(config, "conditions");
    self->drop = conditions != NULL;
    self->count = conditions ? json_array_size(conditions) : 1;
    self->conditions = calloc(self->count, sizeof *self->conditions);
    const char *mode = json_string_value(json_object_get(config, "error_mode"));
    self->mode = mode && !strcmp(mode, "ignore")   ? MODE_IGNORE
                 : mode && !strcmp(mode, "silent") ? MODE_SILENT
                                                   : MODE_PROPAGATE;
    for (size_t i = 0; self->conditions && i < self->count; i++) {
        char why[400];
        if (drv_condition_init(&self->conditions[i], node, conditions ? json_array_get(conditions, i) : config, why,
                               sizeof why) != 0) {
            snprintf(err, errlen, "node %s: condition %zu: %s", node->id, i, why);
            return -1;
        }
    }
    return self->conditions ? 0 : -1;
}

//  Whether the record goes on.
static bool s_keep(drv_node_t *node, filter_t *self, const msgpack_object *record)
{
    if (!self->drop) {
        return drv_condition_matches(&self->conditions[0], record);
    }
    for (size_t i = 0; i < self->count; i++) {
        char why[300];
        int met = drv_condition_test(&self->conditions[i], record, why, sizeof why);
        if (met == 1) {
            return false;
        }
        if (met < 0 && self->mode != MODE_SILENT) {
            drv_node_record_error(node, why);
        }
        if (met < 0 && self->mode == MODE_PROPAGATE) {
            return true; // as it came
        }
    }
    return true;
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    filter_t *self = node->state;
    msgpack_object *kept = drv_node_alloc(node, (n ? n : 1) * sizeof *kept);
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (s_keep(node, self, &records[i])) {
            kept[count++] = records[i];
        }
    }
    drv_node_count_dropped(node, n - count);
    if (count > 0) {
        drv_node_forward(node, kept, count);
    }
}

static void s_destroy(drv_node_t *node)
{
    filter_t *self = node->state;
    for (size_t i = 0; self && self->conditions && i < self->count; i++) {
        drv_condition_fini(&self->conditions[i]);
    }
    if (self) {
        free(self->conditions);
    }
    free(self);
}

const drv_node_kind_t drv_processor_filter = {
    .schema = &drv_schema_processor_filter,
    .init = s_init,
    .run = s_run,
    .destroy = s_destroy,
};
