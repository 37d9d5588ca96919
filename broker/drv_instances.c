/*  drv_instances — routing state and credit of each instance the broker
    feeds. */
#include "drv_instances.h"

#include <czmq.h>
#include <stdlib.h>
#include <string.h>

struct drv_instances_t {
    zhashx_t *table;  // id -> drv_instance_t
    size_t rr;        // round-robin cursor: index after the last pick
    size_t rr_before; // the cursor before the last pick (drv_instances_unpick)
};

static void s_instance_free(void **item)
{
    drv_instance_t *inst = *item;
    if (inst) {
        free(inst->id);
        free(inst->pipeline);
        json_decref(inst->nodes);
        drv_ring_destroy(&inst->ring);
        free(inst);
        *item = NULL;
    }
}

drv_instances_t *drv_instances_new(void)
{
    drv_instances_t *self = calloc(1, sizeof *self);
    self->table = zhashx_new();
    zhashx_set_destructor(self->table, s_instance_free);
    return self;
}

void drv_instances_destroy(drv_instances_t **self_p)
{
    drv_instances_t *self = *self_p;
    if (self) {
        zhashx_destroy(&self->table);
        free(self);
        *self_p = NULL;
    }
}

drv_instance_t *drv_instances_get(drv_instances_t *self, const char *id)
{
    drv_instance_t *inst = zhashx_lookup(self->table, id);
    if (!inst) {
        inst = calloc(1, sizeof *inst);
        inst->id = strdup(id);
        zhashx_insert(self->table, id, inst);
    }
    return inst;
}

drv_instance_t *drv_instances_lookup(drv_instances_t *self, const char *id)
{
    return zhashx_lookup(self->table, id);
}

void drv_instances_delete(drv_instances_t *self, const char *id)
{
    zhashx_delete(self->table, id);
}

drv_instance_t *drv_instances_first(drv_instances_t *self)
{
    return zhashx_first(self->table);
}

drv_instance_t *drv_instances_next(drv_instances_t *self)
{
    return zhashx_next(self->table);
}

void drv_instance_route(drv_instance_t *inst, const char *pipeline, json_t *nodes)
{
    free(inst->pipeline);
    inst->pipeline = strdup(pipeline);
    inst->routable = true;
    inst->unreachable = false;
    inst->drain_pending = false;
    json_decref(inst->nodes);
    inst->nodes = json_is_array(nodes) ? json_incref(nodes) : NULL;
    inst->next_sync_ms = 0; // sync at once if it has not granted us credit
    inst->sync_awaited = 0; // a new process, maybe: a SYNC the old one took is never answered
}

void drv_instance_unroute(drv_instance_t *inst)
{
    inst->unreachable = inst->routable;
    inst->resync = inst->routable;
    inst->routable = false;
    inst->credit = 0;
    //  Its credit is the only thing that routes it again, and it sends
    //  credit unasked only as it settles batches: without a SYNC an idle
    //  instance would stay unrouted for good (docs/architecture.md).
    inst->credit_known = false;
    inst->next_sync_ms = 0;
    inst->sync_awaited = 0; // its pipe is gone, and a SYNC it held with it
}

bool drv_instance_wants_sync(const drv_instance_t *inst, int64_t now_ms)
{
    return (inst->routable || inst->unreachable) && !inst->deleted_at_ms && !inst->credit_known &&
           now_ms >= inst->next_sync_ms;
}

void drv_instance_sync_sent(drv_instance_t *inst, int64_t id, bool taken, int64_t now_ms)
{
    inst->sync_serial = id;
    if (taken) {
        inst->sync_awaited = id;
    }
    inst->next_sync_ms = now_ms + (taken ? SYNC_ANSWER_MS : SYNC_RETRY_MS);
    inst->sent_since_sync = 0; // its answer counts what goes after this SYNC against its window
}

void drv_instance_credit(drv_instance_t *inst, int64_t count, bool reset, bool synced, int64_t sync_id,
                         int64_t in_flight)
{
    if (inst->sync_awaited) {
        if (!synced || (sync_id && sync_id != inst->sync_awaited)) {
            return; // its own first credit, or the answer to an older SYNC: the awaited answer states the window
        }
        inst->sync_awaited = 0; // (an older worker names no SYNC: it answers the one it took)
    }
    if (!reset && !inst->credit_known) {
        //  Sent before it read our SYNC (to the broker before us, queued in
        //  its socket while it reconnected, or before a failed send): its
        //  answer states the window; until then it stays unknown, and
        //  SYNCed. (Credit taken from it would stall at whatever it said.)
        return;
    }
    if (synced) {
        //  Behind the acks for everything sent before the SYNC: what is
        //  unacked now went out after it and uses the window already.
        count = count > in_flight ? count - in_flight : 0;
    }
    inst->credit = reset ? count : inst->credit + count;
    inst->credit_known = true;
    if (reset && inst->unreachable && !inst->deleted_at_ms) {
        //  A send failed while its process was being replaced (the old pipe
        //  was gone, the new one not yet there): the new one is here.
        inst->routable = true;
        inst->unreachable = false;
    }
}

bool drv_instance_serves(const drv_instance_t *inst, const char *pipeline, const char *node)
{
    if (!inst->routable || inst->deleted_at_ms || inst->credit <= 0 || inst->ring_blocked || !inst->pipeline ||
        strcmp(inst->pipeline, pipeline)) {
        return false;
    }
    if (!inst->nodes) {
        return true;
    }
    size_t index;
    json_t *name;
    json_array_foreach(inst->nodes, index, name)
    {
        if (json_is_string(name) && !strcmp(json_string_value(name), node)) {
            return true;
        }
    }
    return false;
}

drv_instance_t *drv_instances_pick(drv_instances_t *self, const char *pipeline, const char *node)
{
    size_t count = zhashx_size(self->table);
    if (count == 0) {
        return NULL;
    }
    size_t start = self->rr % count;
    //  Two passes over the table, starting after the last pick: round-robin.
    for (int pass = 0; pass < 2; pass++) {
        size_t index = 0;
        for (drv_instance_t *inst = zhashx_first(self->table); inst; inst = zhashx_next(self->table), index++) {
            if ((pass == 0 && index < start) || (pass == 1 && index >= start)) {
                continue;
            }
            if (drv_instance_serves(inst, pipeline, node)) {
                self->rr_before = self->rr;
                self->rr = index + 1;
                return inst;
            }
        }
    }
    return NULL;
}

void drv_instances_unpick(drv_instances_t *self)
{
    self->rr = self->rr_before;
}

bool drv_instances_serving(drv_instances_t *self, const char *pipeline, const char *node)
{
    for (drv_instance_t *inst = zhashx_first(self->table); inst; inst = zhashx_next(self->table)) {
        if (drv_instance_serves(inst, pipeline, node)) {
            return true;
        }
    }
    return false;
}
