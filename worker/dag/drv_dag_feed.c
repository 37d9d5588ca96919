/*  drv_dag_feed — an input read back (from a disk buffer's log, the memory
    log, a handover) run through the receiver it entered at, as it ran when
    it was taken. Above drv_node.c, below the files that read inputs back. */
#include "drv_dag_internal.h"

#include "drv_record.h"

#include "drover/drv_batch.h"

#include <string.h>

//  The receiver an input read back entered at: the node of that id, else
//  (the spec changed) the first receiver that can read it (any, for
//  records; one with a replay hook, for a raw input), so that nothing is
//  dropped.
static drv_node_t *s_entry_node(drv_dag_t *self, const char *id, bool raw)
{
    drv_node_t *first = NULL;
    for (size_t i = 0; i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        if (node->kind->schema->role != DRV_ROLE_RECEIVER) {
            continue;
        }
        if (!strcmp(node->id, id)) {
            return node;
        }
        first = first || (raw && !node->kind->replay) ? first : node;
    }
    return first;
}

//  Runs an input read back through the receiver it entered at: its
//  records, or -1 when nothing can be made of it here (the receiver that
//  took it is of another kind now).
int drv_dag_feed(drv_dag_t *self, const drv_buffer_input_t *input, drv_node_t **entry)
{
    drv_node_t *node = *entry = s_entry_node(self, input->node, input->form == DRV_BUFFER_RAW);
    msgpack_zone_clear(&self->batch_zone);
    int n = -1;
    self->feeding = input;
    if (node && input->form == DRV_BUFFER_RAW && node->kind->replay) {
        n = node->kind->replay(node, input->data, input->size);
    } else if (node && input->form == DRV_BUFFER_RECORDS) {
        msgpack_object root;
        const msgpack_object *records;
        char err[300];
        n = drv_batch_decode_checked(input->data, input->size, &self->batch_zone, &root, &records, err, sizeof err);
        //  the time it was taken is its records' observed time where they say none (drv_dag_input.c)
        const msgpack_object *observed =
            n > 0 ? drv_record_observed(&self->batch_zone, records, (size_t)n, (uint64_t)input->time_ms * 1000000u)
                  : NULL;
        records = observed ? observed : records; // out of memory: run as it was kept
        if (n >= 0) {
            drv_node_forward(node, records, (size_t)n);
        }
    }
    self->feeding = NULL;
    return n;
}
