/*  drv_dag_counts — every record is counted once, by the process that took
    it (docs/operations.md, "Counters through a crash"): a node's out and
    the next node's in come from the same synchronous pass, so they agree
    whenever droverd reads them. What a process runs that another took
    (the log read back after a crash, a slot adopted, a hand-over) it does
    not count again; only exporters count what they deliver.
    With a disk buffer the counts are saved with the exporters' positions
    (drv_dag_positions.c), together with the input they were counted up to,
    in one file written whole: the next process of the same instance, after
    a crash, goes on from them (counts_restored tells droverd to forget the
    crashed process's last heartbeat, drv_lifecycle.c) and counts what the
    log holds past that input. Below drv_dag_positions.c. */
#include "drv_dag_internal.h"

#include "drover/drv_log.h"

#include <stdio.h>
#include <string.h>

#define KEY "#counts" // not a node id ([a-z0-9_-]): beside the positions in the slot's file
#define FIELDS 5      // per node: in, out, dropped, errors, counted up to

static void s_instance(const drv_dag_t *self, char *out, size_t size)
{
    snprintf(out, size, "%s/%s@%lld#%d", self->who.group, self->who.pipeline, (long long)self->who.generation,
             self->who.core);
}

static bool s_exporter(const drv_node_t *node)
{
    return node->kind->schema->role == DRV_ROLE_EXPORTER;
}

void drv_dag_counts_restore(drv_dag_t *self, const json_t *positions)
{
    //  What the log holds was taken by a process before this one: counted there.
    int64_t found = drv_buffer_last(self->buffer);
    self->taken_counted_upto = found;
    for (size_t i = 0; i < self->count; i++) {
        self->nodes[i].counted_upto = found;
    }
    const json_t *saved = json_object_get(positions, KEY);
    char me[400];
    s_instance(self, me, sizeof me);
    const char *whose = json_string_value(json_object_get(saved, "instance"));
    if (!whose || strcmp(whose, me) != 0 || json_is_true(json_object_get(saved, "reported"))) {
        return; // another instance's, or droverd has them: not ours to go on from
    }
    const json_t *nodes = json_object_get(saved, "nodes");
    for (size_t i = 0; i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        const json_t *c = json_object_get(nodes, node->id);
        if (json_array_size(c) != FIELDS) {
            continue; // a node the spec did not have then: it counts from zero
        }
        node->in = json_integer_value(json_array_get(c, 0));
        node->out = json_integer_value(json_array_get(c, 1));
        node->dropped = json_integer_value(json_array_get(c, 2));
        node->errors = json_integer_value(json_array_get(c, 3));
        int64_t upto = json_integer_value(json_array_get(c, 4));
        node->counted_upto = upto < found ? upto : found; // an empty log numbers from 1 again
    }
    int64_t taken = json_integer_value(json_object_get(saved, "taken"));
    self->taken_counted_upto = taken < found ? taken : found;
    self->unowned_errors = json_integer_value(json_object_get(saved, "unowned_errors"));
    self->counts_restored = true;
    drv_info("counts of a crashed process taken back instance=%s counted_upto=%lld log_last=%lld", me,
             (long long)self->taken_counted_upto, (long long)found);
}

json_t *drv_dag_counts_saved(const drv_dag_t *self, bool reported)
{
    char me[400];
    s_instance(self, me, sizeof me);
    json_t *nodes = json_object();
    for (size_t i = 0; i < self->count; i++) {
        const drv_node_t *node = &self->nodes[i];
        //  An exporter behind has been counted in up to where it reads again.
        int64_t upto = s_exporter(node) && node->lag_next > 0 ? node->lag_next - 1 : self->running;
        json_object_set_new(nodes, node->id,
                            json_pack("[I, I, I, I, I]", (json_int_t)node->in, (json_int_t)node->out,
                                      (json_int_t)node->dropped, (json_int_t)node->errors, (json_int_t)upto));
    }
    //  Receivers count in as they take (into the log), the rest as inputs run.
    json_t *counts =
        json_pack("{s:s, s:b, s:I, s:I, s:o}", "instance", me, "reported", reported, "taken", (json_int_t)self->input,
                  "unowned_errors", (json_int_t)self->unowned_errors, "nodes", nodes);
    json_t *positions = json_object();
    json_object_set_new(positions, KEY, counts);
    return positions;
}
