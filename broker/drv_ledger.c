/*  drv_ledger — what each instance owes an acknowledgement for, and what
    waits for another instance. The guarantees are listed in drv_ledger.h. */
#include "drv_ledger.h"

#include <stdlib.h>
#include <string.h>

//  One instance's account.
typedef struct {
    zlistx_t *unacked;  // drv_pending_t sent and not yet acknowledged, oldest first
    bool drained_clean; // it said DRAINED: everything sent was exported
} account_t;

struct drv_ledger_t {
    zhashx_t *accounts;  // instance id -> account_t
    zlistx_t *redeliver; // drv_pending_t waiting for another instance, oldest first
};

drv_route_t *drv_route_new(const char *pipeline, const char *node, const char *endpoint, const zframe_t *header)
{
    drv_route_t *route = calloc(1, sizeof *route);
    route->refs = 1;
    route->pipeline = strdup(pipeline);
    route->node = strdup(node);
    route->endpoint = strdup(endpoint);
    route->header = zframe_dup((zframe_t *)header);
    return route;
}

drv_route_t *drv_route_ref(drv_route_t *route)
{
    route->refs++;
    return route;
}

void drv_route_unref(drv_route_t **route_p)
{
    drv_route_t *route = *route_p;
    if (route && --route->refs == 0) {
        free(route->pipeline);
        free(route->node);
        free(route->endpoint);
        zframe_destroy(&route->header);
        free(route);
    }
    *route_p = NULL;
}

drv_pending_t *drv_pending_new(drv_route_t *route, zmq_msg_t *payload, const drv_pending_t *ack_from)
{
    drv_pending_t *pending = calloc(1, sizeof *pending);
    pending->route = drv_route_ref(route);
    if (ack_from && ack_from->reply_to) {
        pending->reply_to = zframe_dup(ack_from->reply_to);
        pending->msg_id = zframe_dup(ack_from->msg_id);
    }
    zmq_msg_init(&pending->payload);
    zmq_msg_copy(&pending->payload, payload);
    pending->held = (int64_t)zmq_msg_size(&pending->payload);
    route->held_bytes += pending->held;
    return pending;
}

void drv_pending_destroy(drv_pending_t **pending_p)
{
    drv_pending_t *pending = *pending_p;
    if (pending) {
        pending->route->held_bytes -= pending->held;
        drv_route_unref(&pending->route);
        zframe_destroy(&pending->reply_to);
        zframe_destroy(&pending->msg_id);
        zmq_msg_close(&pending->payload);
        free(pending);
        *pending_p = NULL;
    }
}

static void s_pending_free(void **item)
{
    drv_pending_destroy((drv_pending_t **)item);
}

static void s_account_free(void **item)
{
    account_t *account = *item;
    if (account) {
        zlistx_destroy(&account->unacked);
        free(account);
        *item = NULL;
    }
}

drv_ledger_t *drv_ledger_new(void)
{
    drv_ledger_t *self = calloc(1, sizeof *self);
    self->accounts = zhashx_new();
    zhashx_set_destructor(self->accounts, s_account_free);
    self->redeliver = zlistx_new();
    zlistx_set_destructor(self->redeliver, s_pending_free);
    return self;
}

void drv_ledger_destroy(drv_ledger_t **self_p)
{
    drv_ledger_t *self = *self_p;
    if (self) {
        zhashx_destroy(&self->accounts);
        zlistx_destroy(&self->redeliver);
        free(self);
        *self_p = NULL;
    }
}

static account_t *s_account(drv_ledger_t *self, const char *id)
{
    account_t *account = zhashx_lookup(self->accounts, id);
    if (!account) {
        account = calloc(1, sizeof *account);
        account->unacked = zlistx_new();
        zlistx_set_destructor(account->unacked, s_pending_free);
        zhashx_insert(self->accounts, id, account);
    }
    return account;
}

void drv_ledger_open(drv_ledger_t *self, const char *id)
{
    s_account(self, id)->drained_clean = false;
}

void drv_ledger_sent(drv_ledger_t *self, const char *id, drv_pending_t **pending_p)
{
    zlistx_add_end(s_account(self, id)->unacked, *pending_p);
    *pending_p = NULL;
}

size_t drv_ledger_unacked(drv_ledger_t *self, const char *id)
{
    account_t *account = zhashx_lookup(self->accounts, id);
    return account ? zlistx_size(account->unacked) : 0;
}

void drv_ledger_acked(drv_ledger_t *self, const char *id, int64_t count, drv_ledger_done_fn *done, void *arg)
{
    account_t *account = zhashx_lookup(self->accounts, id);
    for (int64_t k = 0; account && k < count && zlistx_size(account->unacked) > 0; k++) {
        const drv_pending_t *oldest = zlistx_first(account->unacked);
        if (done) {
            done(oldest, arg);
        }
        zlistx_delete(account->unacked, zlistx_cursor(account->unacked));
    }
}

void drv_ledger_drained(drv_ledger_t *self, const char *id)
{
    account_t *account = s_account(self, id);
    account->drained_clean = true;
    zlistx_purge(account->unacked);
}

size_t drv_ledger_orphan(drv_ledger_t *self, const char *id)
{
    account_t *account = zhashx_lookup(self->accounts, id);
    if (!account) {
        return 0;
    }
    if (account->drained_clean) {
        zlistx_purge(account->unacked);
        return 0;
    }
    size_t moved = 0;
    drv_pending_t *pending;
    while ((pending = zlistx_detach(account->unacked, NULL))) {
        zlistx_add_end(self->redeliver, pending);
        moved++;
    }
    return moved;
}

void drv_ledger_forget(drv_ledger_t *self, const char *id)
{
    drv_ledger_orphan(self, id);
    zhashx_delete(self->accounts, id);
}

void drv_ledger_park(drv_ledger_t *self, drv_pending_t **pending_p)
{
    zlistx_add_end(self->redeliver, *pending_p);
    *pending_p = NULL;
}

size_t drv_ledger_parked(drv_ledger_t *self)
{
    return zlistx_size(self->redeliver);
}

size_t drv_ledger_redeliver(drv_ledger_t *self, drv_ledger_deliver_fn *deliver, void *arg)
{
    size_t taken = 0;
    drv_pending_t *pending = zlistx_first(self->redeliver);
    while (pending) {
        int rc = deliver(pending, arg);
        if (rc < 0) {
            break; // it stays first in line
        }
        if (rc == 0) {
            pending = zlistx_next(self->redeliver);
            continue;
        }
        zlistx_delete(self->redeliver, zlistx_cursor(self->redeliver));
        taken++;
        pending = zlistx_first(self->redeliver);
    }
    return taken;
}
