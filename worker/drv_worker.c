/*  drv_worker — the instance's event loop.
    Two links: `control` (DEALER to droverd: hello, spec, ready, heartbeats,
    drained) and the feed from the broker (drv_feed.c: batches in, credit
    out). The worker only ever asks the broker for as many batches as its
    credit window, so a slow exporter becomes back-pressure at the broker's
    front door. */
#include "drv_worker.h"
#include "drv_dag.h"
#include "drv_feed.h"
#include "drv_nodes.h"
#include "drv_tap.h"

#include "drover/drv_log.h"
#include "drover/drv_msg_send.h"
#include "drover/drv_time.h"

#include <czmq.h>
#include <signal.h>
#include <string.h>

#define SPEC_WAIT_MS 10000

#define TAP_FLUSH_MS 100
#define MAX_SOCKETS 16 // network receivers one instance polls

typedef struct {
    zsock_t *control;     // DEALER to droverd
    drv_feed_t *feed;     // from the broker, NULL until the spec names it (and without receiver:zmq)
    drv_dag_t *dag;       // the pipeline, NULL until built
    char *instance;       // "{group}/{pipeline}@{generation}#{core}"
    int64_t heartbeat_ms; // heartbeat period from the spec message
    int64_t next_heartbeat_ms;
    bool has_zmq;            // pipeline has receiver:zmq nodes, so drains come via the broker
    bool drain_requested;    // droverd or the broker asked us to drain
    bool receivers_draining; // network receivers were told to take nothing new
    bool marker_seen;        // the broker's DRAIN marker arrived after our last batch
    int64_t next_tap_ms;     // mono ms before which no samples are sent
} worker_t;

static volatile sig_atomic_t s_terminating = 0;

static void s_on_signal(int sig)
{
    (void)sig;
    s_terminating = 1;
}

static void s_send_simple(worker_t *self, drv_msg_type_t type)
{
    drv_msg_t msg;
    drv_msg_init(&msg, type);
    drv_msg_set_str(&msg, DRV_F_INSTANCE, self->instance);
    if (self->dag && (type == DRV_MSG_HEARTBEAT || type == DRV_MSG_DRAINED)) {
        int64_t in, out, errors;
        drv_dag_counters(self->dag, &in, &out, &errors);
        drv_msg_set_int(&msg, DRV_F_RECORDS_IN, in);
        drv_msg_set_int(&msg, DRV_F_RECORDS_OUT, out);
        drv_msg_set_int(&msg, DRV_F_ERRORS, errors);
        drv_msg_set_int(&msg, DRV_F_BATCHES, self->feed ? drv_feed_batches(self->feed) : 0);
        json_t *nodes = drv_dag_node_counters(self->dag);
        drv_msg_set_json(&msg, DRV_F_NODES, nodes);
        json_decref(nodes);
        json_t *buffer = drv_dag_buffer_stats(self->dag);
        if (buffer) {
            drv_msg_set_json(&msg, DRV_F_BUFFER, buffer);
            json_decref(buffer);
        }
    }
    drv_msg_send(self->control, NULL, &msg, false);
    drv_msg_clear(&msg);
}

//  Samples for the taps go to droverd at most every TAP_FLUSH_MS.
static void s_tap_flush_if_due(worker_t *self)
{
    int64_t now = drv_time_mono_ms();
    if (now < self->next_tap_ms) {
        return;
    }
    json_t *samples = drv_tap_take(self->dag);
    if (samples) {
        drv_msg_t msg;
        drv_msg_init(&msg, DRV_MSG_TAPPED);
        drv_msg_set_str(&msg, DRV_F_INSTANCE, self->instance);
        drv_msg_set_json(&msg, DRV_F_NODES, samples);
        drv_msg_send(self->control, NULL, &msg, false);
        drv_msg_clear(&msg);
        json_decref(samples);
        self->next_tap_ms = now + TAP_FLUSH_MS;
    }
}

static void s_heartbeat_if_due(worker_t *self)
{
    int64_t now = drv_time_mono_ms();
    if (now >= self->next_heartbeat_ms) {
        s_send_simple(self, DRV_MSG_HEARTBEAT);
        self->next_heartbeat_ms = now + self->heartbeat_ms;
    }
}

//  How many instances the pipeline runs (they share its disk buffer's max_bytes).
static int s_shares(const json_t *spec)
{
    json_t *cores = json_object_get(spec, "cores");
    if (json_is_array(json_object_get(cores, "set"))) {
        return (int)json_array_size(json_object_get(cores, "set"));
    }
    if (json_is_true(json_object_get(cores, "all"))) {
        long online = sysconf(_SC_NPROCESSORS_ONLN); // pinned, this process sees one CPU of them
        return online > 0 ? (int)online : 1;
    }
    json_int_t count = json_integer_value(json_object_get(cores, "count"));
    return count > 0 ? (int)count : 1;
}

//  Waits for the SPEC reply to our HELLO and builds the DAG from it.
static int s_fetch_spec(worker_t *self, int64_t *spec_us)
{
    int64_t deadline = drv_time_mono_ms() + SPEC_WAIT_MS;
    while (!s_terminating) {
        int64_t left = deadline - drv_time_mono_ms();
        if (left <= 0) {
            drv_error("no spec from droverd within %d ms instance=%s", SPEC_WAIT_MS, self->instance);
            return DRV_WORKER_EXIT_SYSTEM;
        }
        zmq_pollitem_t item = {zsock_resolve(self->control), 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, left) <= 0) {
            continue;
        }
        zframe_t *frame = zframe_recv(self->control);
        if (!frame) {
            continue;
        }
        *spec_us = drv_time_mono_us();
        drv_msg_t msg;
        char err[200];
        int rc = drv_msg_decode(&msg, zframe_data(frame), zframe_size(frame), err, sizeof err);
        zframe_destroy(&frame);
        if (rc != 0 || msg.type != DRV_MSG_SPEC) {
            drv_warn("ignored control message while waiting for spec reason=\"%s\"",
                     rc ? err : drv_msg_type_name(msg.type));
            drv_msg_clear(&msg);
            continue;
        }
        self->heartbeat_ms = msg.heartbeat_ms > 0 ? msg.heartbeat_ms : 1000;
        char *sep = strchr(msg.pipeline, ':');
        char group[128];
        snprintf(group, sizeof group, "%.*s", sep ? (int)(sep - msg.pipeline) : 0, msg.pipeline);
        drv_dag_identity_t who = {group,          sep ? sep + 1 : msg.pipeline, msg.generation, (int)msg.core,
                                  msg.buffer_dir, s_shares(msg.spec),           msg.run_dir};
        self->dag = drv_dag_new(msg.spec, &who, drv_nodes_kinds(), err, sizeof err);
        if (!self->dag) {
            drv_error("instance cannot start instance=%s reason=\"%s\"", self->instance, err);
            drv_msg_t failed;
            drv_msg_init(&failed, DRV_MSG_INIT_FAILED);
            drv_msg_set_str(&failed, DRV_F_INSTANCE, self->instance);
            drv_msg_set_str(&failed, DRV_F_REASON, err);
            drv_msg_send(self->control, NULL, &failed, false);
            drv_msg_clear(&failed);
            drv_msg_clear(&msg);
            return DRV_WORKER_EXIT_INIT_FAILED;
        }
        self->has_zmq = drv_dag_has_zmq_receivers(self->dag);
        if (self->has_zmq) {
            //  DROVER_DATA_RING=off: batches over the socket only (docs/operations.md).
            const char *ring = getenv("DROVER_DATA_RING");
            //  credit_window: required in a spec message, at least 1 (engine.credit_window).
            self->feed = drv_feed_new(self->instance, msg.data_endpoint, msg.credit_window,
                                      !ring || strcmp(ring, "off") != 0, err, sizeof err);
            if (!self->feed) {
                drv_error("%s", err);
                drv_msg_clear(&msg);
                return DRV_WORKER_EXIT_SYSTEM;
            }
        }
        drv_msg_clear(&msg);
        return 0;
    }
    return DRV_WORKER_EXIT_OK;
}

static void s_handle_control(worker_t *self)
{
    zframe_t *frame;
    zmq_pollitem_t item = {zsock_resolve(self->control), 0, ZMQ_POLLIN, 0};
    while (zmq_poll(&item, 1, 0) > 0 && (frame = zframe_recv(self->control))) {
        drv_msg_t msg;
        char err[200];
        if (drv_msg_decode(&msg, zframe_data(frame), zframe_size(frame), err, sizeof err) != 0) {
            drv_warn("malformed control message reason=\"%s\"", err);
        } else if (msg.type == DRV_MSG_DRAIN) {
            //  Straight from droverd: the broker is not routing to us (it is
            //  gone or never knew us), so what is queued now is all there is.
            drv_info("drain requested by droverd instance=%s", self->instance);
            self->drain_requested = true;
            self->marker_seen = true;
        } else if (msg.type == DRV_MSG_TAP && self->dag && json_is_array(msg.nodes)) {
            drv_tap_set(self->dag, msg.nodes, msg.n);
        }
        drv_msg_clear(&msg);
        zframe_destroy(&frame);
    }
}

//  What the broker sent: 0, or -1 when the instance must stop.
static int s_take_data(worker_t *self)
{
    bool marker = false;
    if (drv_feed_take(self->feed, self->dag, &marker) != 0) {
        return -1;
    }
    if (marker) { // after our last batch: what came is all there is
        self->drain_requested = true;
        self->marker_seen = true;
    }
    return 0;
}

//  Receivers answering are told what settled (and a disk buffer syncs
//  when due) with or without a broker to acknowledge to.
static void s_settle(worker_t *self)
{
    if (self->feed) {
        drv_feed_settle(self->feed, self->dag);
    } else {
        drv_dag_settle(self->dag);
    }
}

static int s_loop(worker_t *self)
{
    if (self->feed) {
        drv_feed_start(self->feed);
    }
    bool said_ready = false;
    self->next_heartbeat_ms = drv_time_mono_ms() + self->heartbeat_ms;
    while (!s_terminating) {
        //  READY once every node can serve (a Kafka consumer in its group):
        //  heartbeats go out before, the loop runs as it will after.
        if (!said_ready && drv_dag_ready(self->dag)) {
            s_send_simple(self, DRV_MSG_READY);
            drv_info("ready instance=%s", self->instance);
            said_ready = true;
        }
        int64_t gen_wait_us = -1;
        //  An exporter holding as much as it may: take nothing new (the
        //  broker keeps what it has, HTTP receivers answer 429 themselves).
        bool backlogged = drv_dag_backlogged(self->dag);
        if (!self->drain_requested && !backlogged) {
            drv_dag_generate(self->dag, drv_time_mono_us(), &gen_wait_us);
        }
        int64_t timeout = self->next_heartbeat_ms - drv_time_mono_ms();
        if (gen_wait_us >= 0 && gen_wait_us / 1000 < timeout) {
            timeout = gen_wait_us / 1000;
        }
        if (drv_tap_pending(self->dag)) {
            int64_t tap_ms = self->next_tap_ms - drv_time_mono_ms();
            timeout = tap_ms < timeout ? tap_ms : timeout;
        }
        int64_t receiver_ms = drv_dag_timeout_ms(self->dag);
        if (receiver_ms >= 0 && receiver_ms < timeout) {
            timeout = receiver_ms;
        }
        if (timeout < 0) {
            timeout = 0;
        }
        //  control, data (when fed by the broker), then each network
        //  receiver's socket: polled through a drain until the receiver has
        //  finished what it took (droverd keeps the listening sockets, and
        //  the instances that stay take what this one leaves).
        zmq_pollitem_t items[3 + MAX_SOCKETS];
        int count = 0;
        items[count++] = (zmq_pollitem_t){zsock_resolve(self->control), 0, ZMQ_POLLIN, 0};
        int buffer_fd = drv_dag_buffer_fd(self->dag); // a disk buffer's sync finished: answers may go
        if (buffer_fd >= 0) {
            items[count++] = (zmq_pollitem_t){NULL, buffer_fd, ZMQ_POLLIN, 0};
        }
        bool read_data = self->feed && !backlogged;
        if (read_data) {
            items[count++] = (zmq_pollitem_t){drv_feed_socket(self->feed), 0, ZMQ_POLLIN, 0};
        }
        bool ring_ready = read_data && !drv_feed_sleep(self->feed); // entries waiting: do not wait
        if (ring_ready) {
            timeout = 0;
        }
        int fds[MAX_SOCKETS], first_fd = count;
        size_t fd_nodes[MAX_SOCKETS];
        size_t nfds = drv_dag_fds(self->dag, fds, fd_nodes, MAX_SOCKETS);
        for (size_t i = 0; i < nfds; i++) {
            items[count++] = (zmq_pollitem_t){NULL, fds[i], ZMQ_POLLIN, 0};
        }
        int rc = zmq_poll(items, count, timeout);
        if (read_data) {
            drv_feed_awake(self->feed);
        }
        if (rc < 0 && zmq_errno() != EINTR) {
            drv_error("poll failed: %s", zmq_strerror(zmq_errno()));
            return DRV_WORKER_EXIT_SYSTEM;
        }
        if (rc > 0 && (items[0].revents & ZMQ_POLLIN)) {
            s_handle_control(self);
        }
        if (read_data && (rc > 0 || self->drain_requested || ring_ready) && s_take_data(self) != 0) {
            return DRV_WORKER_EXIT_SYSTEM;
        }
        for (size_t i = 0; rc >= 0 && i < nfds; i++) {
            if (rc == 0 || (items[first_fd + i].revents & ZMQ_POLLIN) || drv_dag_due(self->dag, fd_nodes[i])) {
                drv_dag_readable(self->dag, fd_nodes[i]); // readable, or its timeout is due
            }
        }
        drv_dag_pump(self->dag); // a disk buffer's waiting inputs, as the exporters can take them
        s_settle(self);
        s_heartbeat_if_due(self);
        s_tap_flush_if_due(self);
        if (self->drain_requested && !self->receivers_draining) {
            drv_dag_drain(self->dag);
            self->receivers_draining = true;
        }
        if (self->drain_requested && (!self->has_zmq || self->marker_seen)) {
            drv_dag_hand_over(self->dag); // what failing exporters hold goes to the next instance
            s_settle(self);               // and is settled: a file's checkpoint says so before it is let go
        }
        if (self->drain_requested && (!self->has_zmq || self->marker_seen) && drv_dag_drained(self->dag)) {
            //  Everything the broker sent us came before its marker and has been
            //  exported (exporters finishing later keep a descriptor until they
            //  hold nothing); nothing is left in flight.
            if (self->feed) {
                if (s_take_data(self) != 0) {
                    return DRV_WORKER_EXIT_SYSTEM;
                }
                //  Behind the last ack on the same pipe: the broker may forget
                //  every batch it sent us.
                drv_feed_drained(self->feed, self->dag);
            }
            s_send_simple(self, DRV_MSG_DRAINED);
            drv_dag_positions_final(self->dag); // droverd has the counts: the next process starts from zero
            int64_t in, out, errors;
            drv_dag_counters(self->dag, &in, &out, &errors);
            drv_info("drained instance=%s records_in=%lld records_out=%lld errors=%lld", self->instance, (long long)in,
                     (long long)out, (long long)errors);
            return DRV_WORKER_EXIT_OK;
        }
    }
    drv_info("stopping on signal instance=%s", self->instance);
    return DRV_WORKER_EXIT_OK;
}

int drv_worker_run(const char *control_endpoint, const char *instance, int64_t main_us)
{
    int64_t sockets_us = 0, hello_us = 0, spec_us = 0;
    struct sigaction action = {.sa_handler = s_on_signal};
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    signal(SIGPIPE, SIG_IGN); // a client gone mid-answer is an error on its socket, not our end

    worker_t self = {.instance = strdup(instance)};
    self.control = zsock_new(ZMQ_DEALER);
    zsock_set_identity(self.control, instance);
    zsock_set_linger(self.control, 1000);
    int rc;
    if (zsock_connect(self.control, "%s", control_endpoint) != 0) {
        drv_error("cannot connect to droverd endpoint=%s", control_endpoint);
        rc = DRV_WORKER_EXIT_SYSTEM;
        goto done;
    }
    sockets_us = drv_time_mono_us();
    drv_msg_t hello;
    drv_msg_init(&hello, DRV_MSG_HELLO);
    drv_msg_set_str(&hello, DRV_F_ROLE, "worker");
    drv_msg_set_str(&hello, DRV_F_INSTANCE, instance);
    drv_msg_set_int(&hello, DRV_F_PID, getpid());
    drv_msg_send(self.control, NULL, &hello, false);
    drv_msg_clear(&hello);

    hello_us = drv_time_mono_us();
    rc = s_fetch_spec(&self, &spec_us);
    if (rc == 0 && self.dag && !s_terminating) {
        //  Absolute monotonic µs, lined up with droverd's spawned_at_us by
        //  bench/startup.py.
        drv_debug("startup instance=%s main_us=%lld sockets_us=%lld hello_us=%lld spec_us=%lld dag_us=%lld", instance,
                  (long long)main_us, (long long)sockets_us, (long long)hello_us, (long long)spec_us,
                  (long long)drv_time_mono_us());
        rc = s_loop(&self);
    }
done:
    drv_dag_destroy(&self.dag);
    drv_feed_destroy(&self.feed);
    zsock_destroy(&self.control);
    free(self.instance);
    return rc;
}
