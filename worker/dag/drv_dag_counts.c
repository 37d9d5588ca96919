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
    log holds past that input. Below drv_dag_positions.c.
    And what a heartbeat tells of the counts: the instance's records in
    and out (each record once: at the exporters its first copy goes to) and
    each node's counters (drover/drv_node_counters.h). */
#include "drv_dag_internal.h"

#include "drover/drv_log.h"
#include "drover/drv_node_counters.h"
#include "drover/drv_time.h"

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

//  The nodes each record's first copy reaches, from every receiver: a
//  node's first target, a route's first of each route and of its default.
//  The exporters among them make the instance's records_out, so a fan-out
//  counts each record once (each exporter's own count stays on its node:
//  docs/operations.md, "Counters").
void drv_dag_mark_first_copies(drv_dag_t *self, const json_t *nodes)
{
    int *stack = calloc(self->count + 1, sizeof *stack);
    size_t depth = 0;
    for (size_t i = 0; stack && i < self->count; i++) {
        if (self->nodes[i].kind && self->nodes[i].kind->schema->role == DRV_ROLE_RECEIVER) {
            self->nodes[i].first_copy = true;
            stack[depth++] = (int)i;
        }
    }
    while (depth > 0) {
        drv_node_t *n = &self->nodes[stack[--depth]];
        const json_t *config = json_object_get(json_object_get(nodes, n->id), "config");
        const json_t *firsts = json_array(), *routes = json_object_get(config, "routes");
        if (n->to_count > 0) {
            json_array_append_new((json_t *)firsts, json_string(self->nodes[n->to[0]].id));
        }
        size_t r;
        const json_t *route;
        json_array_foreach(routes, r, route)
        {
            json_array_append((json_t *)firsts, json_array_get(json_object_get(route, "to"), 0));
        }
        if (json_array_size(json_object_get(config, "default")) > 0 && json_is_array(routes)) {
            json_array_append((json_t *)firsts, json_array_get(json_object_get(config, "default"), 0));
        }
        size_t k;
        const json_t *id;
        json_array_foreach(firsts, k, id)
        {
            for (size_t j = 0; j < self->count; j++) {
                if (!self->nodes[j].first_copy && json_is_string(id) &&
                    !strcmp(self->nodes[j].id, json_string_value(id))) {
                    self->nodes[j].first_copy = true;
                    stack[depth++] = (int)j;
                }
            }
        }
        json_decref((json_t *)firsts);
    }
    free(stack);
}

void drv_dag_counters(const drv_dag_t *self, int64_t *records_in, int64_t *records_out, int64_t *errors)
{
    //  What entered: the receivers' in; what left: the exporters' out.
    *records_in = *records_out = 0;
    *errors = self->unowned_errors;
    for (size_t i = 0; i < self->count; i++) {
        const drv_node_t *node = &self->nodes[i];
        drv_node_role_t role = node->kind->schema->role;
        *records_in += role == DRV_ROLE_RECEIVER ? node->in : 0;
        *records_out += role == DRV_ROLE_EXPORTER && node->first_copy ? node->out : 0;
        *errors += node->errors;
    }
}

//  An exporter's delivery: [retries, backlog, failing_ms, last_error,
//  last_failure_age_ms]. failing_ms is how long nothing was delivered since
//  an attempt failed, or how long it has been backlogged, whichever is
//  longer (0: neither); last_failure_age_ms how long ago an attempt last
//  failed (-1: never), so that droverd can tell an exporter that keeps
//  failing from one that failed once and has had nothing to send since.
//  A node's counters, by the names of drover/drv_node_counters.h.
static json_t *s_counters(drv_dag_t *self, drv_node_t *node, int64_t now)
{
    json_t *at[DRV_EXPORTER_COUNTERS] = {
        [DRV_NC_IN] = json_integer(node->in),
        [DRV_NC_OUT] = json_integer(node->out),
        [DRV_NC_DROPPED] = json_integer(node->dropped),
        [DRV_NC_ERRORS] = json_integer(node->errors),
    };
    size_t count = DRV_NODE_COUNTERS;
    if (node->kind->schema->role == DRV_ROLE_EXPORTER) {
        bool backlogged = node->kind->backlogged && node->kind->backlogged(node);
        if (!backlogged) {
            node->backlogged_since_ms = 0;
        } else if (node->backlogged_since_ms == 0) {
            node->backlogged_since_ms = now;
        }
        int64_t failing = node->failing_since_ms ? now - node->failing_since_ms : 0;
        int64_t behind = node->backlogged_since_ms ? now - node->backlogged_since_ms : 0;
        int64_t backlog = node->kind->backlog ? node->kind->backlog(node) : 0;
        int64_t queued = 0, oldest = 0;
        if (node->kind->queue) {
            node->kind->queue(node, &queued, &oldest);
        }
        if (node->lag_next > 0) { // behind in the log: what it has not read again is queued too
            queued += drv_dag_log_bytes_from(self, node->lag_next);
            backlog += node->lag_records;
            int64_t since = node->lag_oldest_ms ? now - (drv_time_wall_ms() - node->lag_oldest_ms) : 0;
            oldest = since && (!oldest || since < oldest) ? since : oldest;
        }
        at[DRV_NC_RETRIES] = json_integer(node->retries);
        at[DRV_NC_BACKLOG] = json_integer(backlog);
        at[DRV_NC_FAILING_MS] = json_integer(failing > behind ? failing : behind);
        const char *why = !node->lag_next ? "backlogged: receivers push back"
                          : self->buffer  ? "behind the others: reads the disk buffer again from its position"
                                          : "behind the others: reads the memory log again from its position";
        //  Only while it fails: a failure it got over is told by its age and
        //  the recovery's (docs/operations.md, "Counters").
        at[DRV_NC_LAST_ERROR] = json_string(failing > 0 ? node->last_error : behind > 0 ? why : "");
        at[DRV_NC_FAILURE_AGE_MS] = json_integer(node->last_failure_ms ? now - node->last_failure_ms : -1);
        at[DRV_NC_QUEUE_BYTES] = json_integer(queued);
        at[DRV_NC_QUEUE_AGE_MS] = json_integer(oldest ? now - oldest : 0);
        at[DRV_NC_QUEUE_DROPPED] = json_integer(node->queue_dropped);
        at[DRV_NC_RECOVERED_AGE_MS] = json_integer(node->recovered_ms ? now - node->recovered_ms : -1);
        count = DRV_EXPORTER_COUNTERS;
    }
    json_t *counters = json_array();
    for (size_t i = 0; i < count; i++) {
        json_array_append_new(counters, at[i]);
    }
    json_t *details = node->kind->details ? node->kind->details(node) : NULL;
    if (details) {
        json_array_append_new(counters, details);
    }
    if (node->duration.count > 0) {
        json_array_append_new(counters, drv_histo_json(&node->duration));
    }
    return counters;
}

json_t *drv_dag_node_counters(drv_dag_t *self)
{
    json_t *nodes = json_object();
    int64_t now = drv_time_mono_ms();
    for (size_t i = 0; i < self->count; i++) {
        json_object_set_new(nodes, self->nodes[i].id, s_counters(self, &self->nodes[i], now));
    }
    return nodes;
}
