/*  drv_broker — the broker's loop: routing with credit-based flow control.

    Each instance grants credit (batches it may receive ahead). A front door
    is polled only while its pipeline has an instance with credit; otherwise
    its queue fills to the high-water mark and producers block — back-pressure
    with bounded memory, and nothing read that cannot be delivered.

    Draining an instance: it leaves the routing set, then a DRAIN marker goes to
    it on the same pipe as its batches, so the marker arrives after the last one.
    Closing a pipeline's front door first unbinds and forwards what is already
    queued (bounded in time), and only then sends the markers of that pipeline's
    draining instances.

    The parts: drv_front_door (producers' endpoints), drv_instances (routing and
    credit), drv_ledger (what is owed an ack; redelivery), drv_broker_flow
    (batches out, acks back) and drv_broker_control (droverd's orders). This
    file is the loop and its timers. */
#include "drv_broker.h"
#include "drv_broker_core.h"

#include "drover/drv_log.h"
#include "drover/drv_msg.h"
#include "drover/drv_time.h"

#include <czmq.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

static volatile sig_atomic_t s_terminating = 0;

static void s_on_signal(int sig)
{
    (void)sig;
    s_terminating = 1;
}

static void s_front_door_free(void **item)
{
    drv_front_door_destroy((drv_front_door_t **)item);
}

static int s_same_pointer(const void *a, const void *b)
{
    return a == b ? 0 : a < b ? -1 : 1;
}

//  Instances droverd reported gone: after the grace, what they never
//  acknowledged goes to another instance of the pipeline (at least once).
//  (Collected first: deleting moves the table's cursor.)
static void s_forget_gone(drv_broker_t *self, int64_t now)
{
    zlistx_t *gone = zlistx_new();
    for (drv_instance_t *inst = drv_instances_first(self->instances); inst;
         inst = drv_instances_next(self->instances)) {
        if (inst->deleted_at_ms && now - inst->deleted_at_ms >= ACK_GRACE_MS) {
            zlistx_add_end(gone, inst);
        }
    }
    for (drv_instance_t *inst = zlistx_first(gone); inst; inst = zlistx_next(gone)) {
        drv_broker_orphan(self, inst, "instance exited");
        drv_ledger_forget(self->ledger, inst->id);
        drv_instances_delete(self->instances, inst->id);
    }
    zlistx_destroy(&gone);
}

//  Closing front doors forward what is queued until empty or their deadline;
//  then the markers of their pipeline's draining instances go out (after the
//  last batch, on the same pipe). (Collected first: deleting moves the cursor.)
static void s_finish_closing(drv_broker_t *self, int64_t now)
{
    zlistx_t *finished = zlistx_new();
    for (drv_front_door_t *fe = zlistx_first(self->front_doors); fe; fe = zlistx_next(self->front_doors)) {
        if (fe->closing &&
            ((drv_broker_readable(self, fe) && drv_broker_forward(self, fe)) || now >= fe->close_deadline_ms)) {
            zlistx_add_end(finished, fe);
        }
    }
    for (drv_front_door_t *fe = zlistx_first(finished); fe; fe = zlistx_next(finished)) {
        drv_info("front door closed pipeline=%s node=%s accepted_batches=%lld", fe->pipeline, fe->node,
                 (long long)fe->batches);
        char *pipeline = strdup(fe->pipeline);
        zlistx_delete(self->front_doors, zlistx_find(self->front_doors, fe));
        if (!drv_broker_closing(self, pipeline)) {
            for (drv_instance_t *inst = drv_instances_first(self->instances); inst;
                 inst = drv_instances_next(self->instances)) {
                if (inst->drain_pending && inst->pipeline && !strcmp(inst->pipeline, pipeline)) {
                    inst->routable = false;
                    drv_broker_send_marker(self, inst);
                }
            }
        }
        free(pipeline);
    }
    zlistx_destroy(&finished);
}

//  Timers: SYNC for instances that never granted us credit (we restarted),
//  markers to retry, instances gone, redelivery, closing front doors, and
//  the heartbeat to droverd.
static void s_tick(drv_broker_t *self)
{
    int64_t now = drv_time_mono_ms();
    for (drv_instance_t *inst = drv_instances_first(self->instances); inst;
         inst = drv_instances_next(self->instances)) {
        if (inst->marker_pending && now >= inst->next_marker_ms) {
            drv_broker_send_marker(self, inst);
        }
        if (drv_instance_wants_sync(inst, now)) {
            drv_msg_t msg;
            drv_msg_init(&msg, DRV_MSG_SYNC);
            int64_t id = inst->sync_serial + 1; // its answer names it
            drv_msg_set_int(&msg, DRV_F_SYNC_ID, id);
            bool taken = drv_msg_send(self->backend, inst->id, &msg, true) == 0; // fails until it connects
            drv_msg_clear(&msg);
            drv_instance_sync_sent(inst, id, taken, now);
        }
    }
    s_forget_gone(self, now);
    drv_broker_redeliver(self);
    s_finish_closing(self, now);
    if (now >= self->next_heartbeat_ms) {
        drv_msg_t msg;
        drv_msg_init(&msg, DRV_MSG_HEARTBEAT);
        drv_msg_set_str(&msg, DRV_F_INSTANCE, "broker");
        drv_msg_set_int(&msg, DRV_F_BATCHES, self->forwarded);
        drv_msg_set_int(&msg, DRV_F_ERRORS, self->refusals.total);
        drv_msg_send(self->control, NULL, &msg, false);
        drv_msg_clear(&msg);
        self->next_heartbeat_ms = now + self->heartbeat_ms;
    }
}

//  How long the loop may sleep: until the next heartbeat, retry, grace or
//  closing front door; an idle broker wakes about once a second.
static long s_next_wait(drv_broker_t *self)
{
    int64_t now = drv_time_mono_ms();
    int64_t next = self->next_heartbeat_ms;
    for (drv_instance_t *inst = drv_instances_first(self->instances); inst;
         inst = drv_instances_next(self->instances)) {
        if (inst->marker_pending && inst->next_marker_ms < next) {
            next = inst->next_marker_ms;
        }
        if (drv_instance_wants_sync(inst, INT64_MAX) && inst->next_sync_ms < next) {
            next = inst->next_sync_ms;
        }
        if (inst->deleted_at_ms && inst->deleted_at_ms + ACK_GRACE_MS < next) {
            next = inst->deleted_at_ms + ACK_GRACE_MS;
        }
    }
    if (drv_broker_closing(self, NULL)) {
        next = now; // flushing: keep turning until it is done
    }
    if (drv_ledger_parked(self->ledger) > 0 && next > now + 10) {
        next = now + 10; // waiting for an instance with credit to take them
    }
    return next > now ? (long)(next - now) : 0;
}

int drv_broker_run(const char *control_endpoint, const char *data_endpoint, const drv_broker_options_t *options)
{
    struct sigaction action = {.sa_handler = s_on_signal};
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);

    drv_broker_t self = {.max_message_bytes = options->max_message_bytes,
                         .front_door_buffer_bytes = options->front_door_buffer_bytes,
                         .heartbeat_ms = options->heartbeat_ms};
    int rc = DRV_BROKER_EXIT_OK;
    self.instances = drv_instances_new();
    self.ledger = drv_ledger_new();
    self.front_doors = zlistx_new();
    zlistx_set_destructor(self.front_doors, s_front_door_free);
    zlistx_set_comparator(self.front_doors, s_same_pointer);
    self.control = zsock_new(ZMQ_DEALER);
    zsock_set_identity(self.control, "broker");
    zsock_set_linger(self.control, 1000);
    self.backend = zsock_new(ZMQ_ROUTER);
    //  Credit bounds what is in flight to an instance (engine.credit_window,
    //  up to 4096 batches): a high-water mark below it would fail sends to a
    //  busy instance that granted the room (docs/architecture.md).
    zsock_set_sndhwm(self.backend, 0);
    zsock_set_router_mandatory(self.backend, 1);
    zsock_set_router_handover(self.backend, 1); // a restarted instance keeps its id
    zsock_set_linger(self.backend, 1000);
    if (zsock_bind(self.backend, "%s", data_endpoint) < 0) {
        drv_error("cannot bind backend endpoint=%s reason=\"%s\"", data_endpoint, zmq_strerror(zmq_errno()));
        rc = DRV_BROKER_EXIT_SYSTEM;
        goto done;
    }
    if (strncmp(data_endpoint, "ipc://", 6) == 0) {
        chmod(data_endpoint + 6, 0600); // only droverd's user may feed instances
    }
    if (zsock_connect(self.control, "%s", control_endpoint) != 0) {
        drv_error("cannot connect to droverd endpoint=%s", control_endpoint);
        rc = DRV_BROKER_EXIT_SYSTEM;
        goto done;
    }
    drv_msg_t hello;
    drv_msg_init(&hello, DRV_MSG_HELLO);
    drv_msg_set_str(&hello, DRV_F_ROLE, "broker");
    drv_msg_set_int(&hello, DRV_F_PID, getpid());
    drv_msg_send(self.control, NULL, &hello, false);
    drv_msg_clear(&hello);
    drv_info("started pid=%d backend=%s", getpid(), data_endpoint);

    //  As many poll items as there are front doors, however many that is.
    zmq_pollitem_t *items = NULL;
    drv_front_door_t **polled = NULL;
    size_t capacity = 0;
    while (!s_terminating) {
        size_t needed = zlistx_size(self.front_doors) + 2;
        if (needed > capacity) {
            capacity = needed * 2;
            items = realloc(items, capacity * sizeof *items);
            polled = realloc(polled, capacity * sizeof *polled);
        }
        int count = 0;
        items[count++] = (zmq_pollitem_t){zsock_resolve(self.control), 0, ZMQ_POLLIN, 0};
        items[count++] = (zmq_pollitem_t){zsock_resolve(self.backend), 0, ZMQ_POLLIN, 0};
        for (drv_front_door_t *fe = zlistx_first(self.front_doors); fe; fe = zlistx_next(self.front_doors)) {
            if (drv_broker_readable(&self, fe)) {
                polled[count] = fe;
                items[count++] = (zmq_pollitem_t){zsock_resolve(fe->sock), 0, ZMQ_POLLIN, 0};
            }
        }
        int ready = zmq_poll(items, count, s_next_wait(&self));
        if (ready < 0 && zmq_errno() != EINTR) {
            drv_error("poll failed: %s", zmq_strerror(zmq_errno()));
            rc = DRV_BROKER_EXIT_SYSTEM;
            break;
        }
        if (ready > 0) {
            if (items[1].revents & ZMQ_POLLIN) {
                for (int i = 0; i < 256 && (zsock_events(self.backend) & ZMQ_POLLIN); i++) {
                    drv_broker_handle_backend(&self);
                }
            }
            if (items[0].revents & ZMQ_POLLIN) {
                while (zsock_events(self.control) & ZMQ_POLLIN) {
                    drv_broker_handle_control(&self);
                }
            }
            for (int i = 2; i < count; i++) {
                if (items[i].revents & ZMQ_POLLIN) {
                    drv_broker_forward(&self, polled[i]);
                }
            }
        }
        s_tick(&self);
    }
    drv_info("stopping forwarded_batches=%lld", (long long)self.forwarded);
    free(items);
    free(polled);
done:
    zlistx_destroy(&self.front_doors);
    drv_ledger_destroy(&self.ledger);
    drv_instances_destroy(&self.instances);
    zsock_destroy(&self.backend);
    zsock_destroy(&self.control);
    return rc;
}
