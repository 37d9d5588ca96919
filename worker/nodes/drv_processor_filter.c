/*  processor:filter — keeps the records that match its condition
    (drv_condition.h: field, op, value). */
#include "drv_condition.h"
#include "drv_node.h"
#include "drv_schemas.h"

#include <stdlib.h>
#include <string.h>

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    drv_condition_t *self = calloc(1, sizeof *self);
    node->state = self;
    if (drv_condition_init(self, node, config) != 0) {
        snprintf(err, errlen, "node %s: cannot encode filter", node->id);
        return -1;
    }
    return 0;
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    msgpack_object *kept = drv_node_alloc(node, (n ? n : 1) * sizeof *kept);
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (drv_condition_matches(node->state, &records[i])) {
            kept[count++] = records[i];
        }
    }
    drv_node_count_dropped(node, n - count);
    if (count > 0) {
        drv_node_forward(node, kept, count);
    }
}

const drv_node_kind_t drv_processor_filter = {
    .schema = &drv_schema_processor_filter,
    .init = s_init,
    .run = s_run,
};
