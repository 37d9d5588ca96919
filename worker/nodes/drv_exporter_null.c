/*  exporter:null — counts and drops. */
#include "drv_node.h"
#include "drv_schemas.h"

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    (void)records;
    drv_node_count_out(node, n);
}

const drv_node_kind_t drv_exporter_null = {
    .schema = &drv_schema_exporter_null,
    .run = s_run,
};
