/*  drv_broker — routing with credit-based flow control.

    Each instance grants credit (batches it may receive ahead). A frontend is
    polled only while its pipeline has an instance with credit; otherwise its
    PULL queue fills to the high-water mark and producers block — back-pressure
    with bounded memory, and nothing read that cannot be delivered.

    Draining an instance: it leaves the routing set, then a DRAIN marker goes to
    it on the same pipe as its batches, so the marker arrives after the last one.
    Closing a pipeline's front door first unbinds and forwards what is already
    queued (bounded in time), and only then sends the markers of that pipeline's
    draining instances. */
#include "drv_broker.h"

#include "drover/drv_log.h"
#include "drover/drv_batch.h"
#include "drover/drv_msg.h"
#include "drover/drv_time.h"

#include <czmq.h>
#include <msgpack.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#define FORWARD_PER_ROUND 256
#define CLOSE_FLUSH_MS 200
#define SYNC_RETRY_MS 100
#define HEARTBEAT_MS 5000 // only feeds a metric; droverd watches the process itself
//  Messages ZeroMQ queues per producer connection before that producer
//  blocks, at most: with the held bytes of each front door bounded by
//  front_door_buffer_bytes, this is what is left outside the broker's count.
#define FRONT_DOOR_HWM_MAX 100
//  After droverd says an instance is gone, acks it sent just before exiting may
//  still be on their way: wait this long before redelivering what is unacked.
#define ACK_GRACE_MS 100

//  A batch sent to an instance and not yet acknowledged: kept (a refcounted
//  zmq message, not a copy of the bytes) until the instance has exported it.
//  Where a batch came from: shared (refcounted) by a front door and every
//  batch of it still pending, so keeping a batch costs no string copies.
typedef struct {
    int refs;
    char *pipeline;      // "group:pipeline"
    char *node;          // receiver node the batches came in on
    char *endpoint;      // the front door, to answer ack-mode producers through
    zframe_t *header;    // the BATCH header for that node, encoded once
    int64_t held_bytes;  // payload bytes of its batches kept until acknowledged
} route_t;

typedef struct {
    route_t *route;      // shared, one reference held
    zmq_msg_t payload;   // the producer's message
    zframe_t *reply_to;  // ack mode: the producer's routing id, else NULL
    zframe_t *msg_id;    // ack mode: the producer's message id
    int64_t held;        // bytes counted in route->held_bytes (the payload may be sent, hence empty)
} pending_t;

static route_t *s_route_new(const char *pipeline, const char *node, const char *endpoint, zframe_t *header)
{
    route_t *route = calloc(1, sizeof *route);
    route->refs = 1;
    route->pipeline = strdup(pipeline);
    route->node = strdup(node);
    route->endpoint = strdup(endpoint);
    route->header = zframe_dup(header);
    return route;
}

static route_t *s_route_ref(route_t *route)
{
    route->refs++;
    return route;
}

static void s_route_unref(route_t **route_p)
{
    route_t *route = *route_p;
    if (route && --route->refs == 0) {
        free(route->pipeline);
        free(route->node);
        free(route->endpoint);
        zframe_destroy(&route->header);
        free(route);
    }
    *route_p = NULL;
}

typedef struct {
    char *id;            // instance id, also its routing id on the backend
    char *pipeline;      // "group:pipeline"; NULL until instance_add names it
    json_t *nodes;       // its receiver:zmq node ids, or NULL for any
    int64_t credit;      // batches we may still send it
    bool credit_known;   // it has granted credit to this broker
    bool routable;       // added and not draining
    bool drain_pending;  // drain asked; marker waits for closing frontends
    bool marker_pending; // marker could not be delivered yet (not connected); retried
    zlistx_t *unacked;   // pending_t sent and not yet acknowledged, oldest first
    bool drained_clean;  // it said DRAINED on the data path: everything sent was exported
    int64_t deleted_at_ms; // droverd said it is gone (0: not yet)
    int64_t next_sync_ms;
    int64_t next_marker_ms;
} instance_t;

typedef struct {
    char *pipeline;       // "group:pipeline"
    char *node;           // receiver node id
    char *endpoint;       // what we bound
    bool ack;             // ROUTER front door: producers get an ack per message once exported
    zsock_t *pull;        // the front door (PULL, or ROUTER in ack mode)
    zframe_t *header;     // encoded BATCH header for this node, reused
    route_t *route;       // the same, shared with the batches still pending
    int64_t batches;      // messages accepted
    bool closing;         // unbound; forwarding what is queued
    int64_t close_deadline_ms;
} frontend_t;

typedef struct {
    zsock_t *control;   // DEALER to droverd
    zlistx_t *redeliver; // pending_t of instances that died, waiting for another instance
    zsock_t *backend;   // ROUTER to workers
    zhashx_t *instances; // id -> instance_t
    zlistx_t *frontends; // frontend_t
    size_t rr;          // round-robin cursor
    int64_t forwarded;  // batches forwarded in total
    int64_t max_message_bytes; // larger producer messages are refused
    int64_t front_door_buffer_bytes; // a front door past this many held bytes is not read
    int64_t refused;    // producer messages refused (too large), in total
    int64_t next_refusal_log_ms; // refusals are logged at most once a second
    int64_t next_heartbeat_ms;
} broker_t;

static volatile sig_atomic_t s_terminating = 0;

static void s_orphan_unacked(broker_t *self, instance_t *inst, const char *why);

static void s_on_signal(int sig)
{
    (void)sig;
    s_terminating = 1;
}

//  A batch kept until acknowledged, counted against its front door's buffer.
static pending_t *s_pending_new(route_t *route, const pending_t *ack_from)
{
    pending_t *pending = calloc(1, sizeof *pending);
    pending->route = s_route_ref(route);
    if (ack_from && ack_from->reply_to) {
        pending->reply_to = zframe_dup(ack_from->reply_to);
        pending->msg_id = zframe_dup(ack_from->msg_id);
    }
    zmq_msg_init(&pending->payload);
    return pending;
}

static void s_pending_hold(pending_t *pending)
{
    pending->held = (int64_t)zmq_msg_size(&pending->payload);
    pending->route->held_bytes += pending->held;
}

static void s_pending_free(void **item)
{
    pending_t *pending = *item;
    if (pending) {
        pending->route->held_bytes -= pending->held;
        s_route_unref(&pending->route);
        zframe_destroy(&pending->reply_to);
        zframe_destroy(&pending->msg_id);
        zmq_msg_close(&pending->payload);
        free(pending);
        *item = NULL;
    }
}

static void s_instance_free(void **item)
{
    instance_t *inst = *item;
    if (inst) {
        zlistx_destroy(&inst->unacked);
        free(inst->id);
        free(inst->pipeline);
        json_decref(inst->nodes);
        free(inst);
        *item = NULL;
    }
}

static void s_frontend_free(void **item)
{
    frontend_t *fe = *item;
    if (fe) {
        zsock_destroy(&fe->pull);
        zframe_destroy(&fe->header);
        s_route_unref(&fe->route);
        free(fe->pipeline);
        free(fe->node);
        free(fe->endpoint);
        free(fe);
        *item = NULL;
    }
}

static int s_same_pointer(const void *a, const void *b)
{
    return a == b ? 0 : a < b ? -1 : 1;
}

static int s_send_msg(zsock_t *sock, const char *identity, drv_msg_t *msg, bool more)
{
    char *data;
    size_t size;
    if (drv_msg_encode(msg, &data, &size) != 0) {
        return -1;
    }
    void *handle = zsock_resolve(sock);
    int rc = 0;
    if (identity) {
        rc = zmq_send(handle, identity, strlen(identity), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ? -1 : 0;
    }
    if (rc == 0) {
        rc = zmq_send(handle, data, size, more ? ZMQ_SNDMORE : 0) < 0 ? -1 : 0;
    }
    free(data);
    return rc;
}

static instance_t *s_instance(broker_t *self, const char *id)
{
    instance_t *inst = zhashx_lookup(self->instances, id);
    if (!inst) {
        inst = calloc(1, sizeof *inst);
        inst->id = strdup(id);
        inst->unacked = zlistx_new();
        zlistx_set_destructor(inst->unacked, s_pending_free);
        zhashx_insert(self->instances, id, inst);
    }
    return inst;
}

static bool s_pipeline_closing(broker_t *self, const char *pipeline)
{
    for (frontend_t *fe = zlistx_first(self->frontends); fe; fe = zlistx_next(self->frontends)) {
        if (fe->closing && strcmp(fe->pipeline, pipeline) == 0) {
            return true;
        }
    }
    return false;
}

static void s_send_marker(broker_t *self, instance_t *inst)
{
    drv_msg_t msg;
    drv_msg_init(&msg, DRV_MSG_DRAIN);
    if (s_send_msg(self->backend, inst->id, &msg, false) != 0) {
        //  Not connected yet (it may be reconnecting to us): retry until it is,
        //  or until droverd's drain deadline gives up on it.
        if (!inst->marker_pending) {
            drv_warn("drain marker undeliverable, retrying instance=%s reason=\"%s\"", inst->id,
                     zmq_strerror(zmq_errno()));
        }
        inst->marker_pending = true;
        inst->next_marker_ms = drv_time_mono_ms() + SYNC_RETRY_MS;
    } else {
        drv_info("drain marker sent instance=%s", inst->id);
        inst->marker_pending = false;
    }
    drv_msg_clear(&msg);
    inst->drain_pending = false;
}

//  True when the instance can take a batch of this pipeline's receiver node.
static bool s_serves_node(const instance_t *inst, const char *pipeline, const char *node_id)
{
    if (!inst->routable || inst->deleted_at_ms || inst->credit <= 0 || !inst->pipeline ||
        strcmp(inst->pipeline, pipeline)) {
        return false;
    }
    if (!inst->nodes) {
        return true;
    }
    size_t index;
    json_t *node;
    json_array_foreach(inst->nodes, index, node)
    {
        if (json_is_string(node) && !strcmp(json_string_value(node), node_id)) {
            return true;
        }
    }
    return false;
}

static bool s_serves(const instance_t *inst, const frontend_t *fe)
{
    return s_serves_node(inst, fe->pipeline, fe->node);
}

//  Picks the next instance, round-robin, that can take a batch of (pipeline, node).
static instance_t *s_pick_node(broker_t *self, const char *pipeline, const char *node)
{
    size_t count = zhashx_size(self->instances);
    if (count == 0) {
        return NULL;
    }
    instance_t *found = NULL;
    size_t index = 0, start = self->rr % count;
    //  Two passes over the table, starting after the last pick: round-robin.
    for (int pass = 0; pass < 2 && !found; pass++) {
        index = 0;
        for (instance_t *inst = zhashx_first(self->instances); inst;
             inst = zhashx_next(self->instances), index++) {
            if ((pass == 0 && index < start) || (pass == 1 && index >= start)) {
                continue;
            }
            if (s_serves_node(inst, pipeline, node)) {
                found = inst;
                self->rr = index + 1;
                break;
            }
        }
    }
    return found;
}

static instance_t *s_pick(broker_t *self, const frontend_t *fe)
{
    return s_pick_node(self, fe->pipeline, fe->node);
}

//  Sends one batch to an instance and keeps it until acknowledged. The
//  payload is moved into the pending copy first (zmq_msg_copy shares the
//  bytes), so nothing is copied. Returns 0, or -1 when the instance is gone.
static int s_send_batch(broker_t *self, instance_t *inst, route_t *route, zmq_msg_t *payload,
                        const pending_t *ack_from)
{
    pending_t *pending = s_pending_new(route, ack_from);
    zframe_t *header = route->header;
    zmq_msg_copy(&pending->payload, payload);
    s_pending_hold(pending);
    void *backend = zsock_resolve(self->backend);
    int rc = zmq_send(backend, inst->id, strlen(inst->id), ZMQ_SNDMORE | ZMQ_DONTWAIT);
    if (rc >= 0) {
        rc = zmq_send(backend, zframe_data(header), zframe_size(header), ZMQ_SNDMORE);
    }
    if (rc >= 0) {
        rc = zmq_msg_send(payload, backend, 0);
    }
    if (rc < 0) {
        s_pending_free((void **)&pending);
        return -1;
    }
    zlistx_add_end(inst->unacked, pending);
    inst->credit--;
    self->forwarded++;
    return 0;
}

//  ZeroMQ counts messages, not bytes: each connection may queue as many
//  messages of the largest size as the buffer holds (16 with the defaults;
//  fewer costs throughput: 1 halved B1).
static int s_front_door_hwm(const broker_t *self)
{
    int64_t hwm = self->front_door_buffer_bytes / self->max_message_bytes;
    return hwm < 1 ? 1 : hwm > FRONT_DOOR_HWM_MAX ? FRONT_DOOR_HWM_MAX : (int)hwm;
}

//  True when the front door may be read: an instance can take a batch and
//  the front door holds less than its buffer limit (else its producers are
//  held back in their own queues, never buffered here).
static bool s_has_credit(broker_t *self, const frontend_t *fe)
{
    if (fe->route->held_bytes >= self->front_door_buffer_bytes) {
        return false;
    }
    for (instance_t *inst = zhashx_first(self->instances); inst; inst = zhashx_next(self->instances)) {
        if (s_serves(inst, fe)) {
            return true;
        }
    }
    return false;
}

static zmsg_t *s_recv_nowait(zsock_t *sock)
{
    if (!(zsock_events(sock) & ZMQ_POLLIN)) {
        return NULL;
    }
    return zmsg_recv(sock);
}

static void s_ack_info_clear(pending_t *info)
{
    zframe_destroy(&info->reply_to);
    zframe_destroy(&info->msg_id);
}

//  Answers a producer through an ack-mode front door: {ok} or {ok: false, error}.
static void s_answer_producer(frontend_t *fe, zframe_t *reply_to, zframe_t *msg_id, const char *error)
{
    msgpack_sbuffer sbuf;
    msgpack_sbuffer_init(&sbuf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, error ? 2 : 1);
    msgpack_pack_str_with_body(&pk, "ok", 2);
    error ? msgpack_pack_false(&pk) : msgpack_pack_true(&pk);
    if (error) {
        msgpack_pack_str_with_body(&pk, "error", 5);
        msgpack_pack_str_with_body(&pk, error, strlen(error));
    }
    void *sock = zsock_resolve(fe->pull);
    if (zmq_send(sock, zframe_data(reply_to), zframe_size(reply_to), ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0 &&
        zmq_send(sock, zframe_data(msg_id), zframe_size(msg_id), ZMQ_SNDMORE) >= 0) {
        zmq_send(sock, sbuf.data, sbuf.size, 0);
    }
    msgpack_sbuffer_destroy(&sbuf);
}

//  Unpacks [producer][id][payload] and checks the payload is a record or a
//  batch before anything is sent on. Returns false (after answering) for junk.
//  Counts a message refused for its size; logs at most once a second.
static void s_refuse_large(broker_t *self, frontend_t *fe, size_t size, char *err, size_t errlen)
{
    self->refused++;
    snprintf(err, errlen, "message of %zu bytes is larger than engine.limits.max_message_bytes (%lld)", size,
             (long long)self->max_message_bytes);
    int64_t now = drv_time_mono_ms();
    if (now >= self->next_refusal_log_ms) {
        drv_warn("refused producer message pipeline=%s node=%s reason=\"%s\" refused_total=%lld", fe->pipeline,
                 fe->node, err, (long long)self->refused);
        self->next_refusal_log_ms = now + 1000;
    }
}

static bool s_ack_envelope(broker_t *self, frontend_t *fe, zmsg_t *msg, pending_t *info, zmq_msg_t *payload)
{
    if (zmsg_size(msg) != 3) {
        return false; // not our protocol: nothing to answer to reliably
    }
    info->reply_to = zmsg_pop(msg);
    info->msg_id = zmsg_pop(msg);
    zframe_t *data = zmsg_pop(msg);
    char err[200] = "";
    if (zframe_size(info->msg_id) == 0 || zframe_size(info->msg_id) > 64) {
        snprintf(err, sizeof err, "message id must be 1 to 64 bytes");
    } else if ((int64_t)zframe_size(data) > self->max_message_bytes) {
        s_refuse_large(self, fe, zframe_size(data), err, sizeof err);
    } else {
        //  An ack promises the records were exported, so what the worker would
        //  refuse is refused here, with its reason, before any ack is given.
        msgpack_zone zone;
        msgpack_zone_init(&zone, 1024);
        msgpack_object root;
        const msgpack_object *records;
        drv_batch_decode(zframe_data(data), zframe_size(data), &zone, &root, &records, err, sizeof err);
        msgpack_zone_destroy(&zone);
    }
    if (err[0]) {
        s_answer_producer(fe, info->reply_to, info->msg_id, err);
        zframe_destroy(&data);
        s_ack_info_clear(info);
        return false;
    }
    zmq_msg_init_size(payload, zframe_size(data));
    memcpy(zmq_msg_data(payload), zframe_data(data), zframe_size(data));
    zframe_destroy(&data);
    return true;
}

//  Moves up to FORWARD_PER_ROUND messages from one frontend to instances.
//  Returns how many were forwarded; sets *empty when the queue ran dry.
static int s_forward(broker_t *self, frontend_t *fe, bool *empty)
{
    int moved = 0;
    *empty = false;
    void *pull = zsock_resolve(fe->pull);
    while (moved < FORWARD_PER_ROUND) {
        instance_t *inst = s_pick(self, fe);
        if (!inst) {
            break;
        }
        zmq_msg_t payload;
        zmq_msg_init(&payload);
        pending_t ack_info = {0};
        const pending_t *ack_from = NULL;
        if (fe->ack) {
            //  [producer id][message id][payload]; junk is answered at once.
            zmsg_t *msg = s_recv_nowait(fe->pull);
            if (!msg) {
                zmq_msg_close(&payload);
                *empty = true;
                break;
            }
            if (!s_ack_envelope(self, fe, msg, &ack_info, &payload)) {
                zmsg_destroy(&msg);
                zmq_msg_close(&payload);
                continue;
            }
            zmsg_destroy(&msg);
            ack_from = &ack_info;
        } else if (zmq_msg_recv(&payload, pull, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&payload);
            *empty = zmq_errno() == EAGAIN;
            break;
        } else if ((int64_t)zmq_msg_size(&payload) > self->max_message_bytes) {
            //  No one to answer on a PULL front door: logged and counted
            //  (drover_broker_refused_messages_total).
            char err[200];
            s_refuse_large(self, fe, zmq_msg_size(&payload), err, sizeof err);
            zmq_msg_close(&payload);
            continue;
        }
        //  Zero-copy: the producer's frame travels on as the batch payload.
        int rc = s_send_batch(self, inst, fe->route, &payload, ack_from);
        if (rc < 0) {
            //  The instance vanished between credit and send: stop routing to it
            //  and give this same message to the next one (nothing was sent).
            drv_warn("instance unreachable, removed from routing instance=%s reason=\"%s\"",
                     inst->id, zmq_strerror(zmq_errno()));
            inst->routable = false;
            inst->credit = 0;
            instance_t *other;
            while ((other = s_pick(self, fe)) &&
                   s_send_batch(self, other, fe->route, &payload, ack_from) != 0) {
                other->routable = false;
                other->credit = 0;
            }
            if (!other) {
                //  Nobody left to take it: keep it for the next instance.
                pending_t *pending = s_pending_new(fe->route, ack_from);
                zmq_msg_move(&pending->payload, &payload);
                s_pending_hold(pending);
                zlistx_add_end(self->redeliver, pending);
            }
            zmq_msg_close(&payload);
            s_ack_info_clear(&ack_info);
            fe->batches++;
            moved++;
            continue;
        }
        s_ack_info_clear(&ack_info);
        fe->batches++;
        moved++;
    }
    return moved;
}

static void s_reply_bound(broker_t *self, frontend_t *fe, bool ok, const char *reason)
{
    drv_msg_t msg;
    drv_msg_init(&msg, DRV_MSG_BOUND);
    drv_msg_set_str(&msg, DRV_F_PIPELINE, fe->pipeline);
    drv_msg_set_str(&msg, DRV_F_NODE, fe->node);
    drv_msg_set_str(&msg, DRV_F_ENDPOINT, fe->endpoint);
    drv_msg_set_bool(&msg, DRV_F_OK, ok);
    if (reason) {
        drv_msg_set_str(&msg, DRV_F_REASON, reason);
    }
    s_send_msg(self->control, NULL, &msg, false);
    drv_msg_clear(&msg);
}

static void s_close_frontend(broker_t *self, frontend_t *fe)
{
    (void)self;
    if (fe->closing) {
        return;
    }
    fe->closing = true;
    fe->close_deadline_ms = drv_time_mono_ms() + CLOSE_FLUSH_MS;
    zsock_unbind(fe->pull, "%s", fe->endpoint);
    drv_info("front door closing pipeline=%s node=%s endpoint=%s", fe->pipeline, fe->node,
             fe->endpoint);
}

static void s_pipeline_set(broker_t *self, drv_msg_t *msg)
{
    //  Close frontends of this pipeline that the new list does not have.
    for (frontend_t *fe = zlistx_first(self->frontends); fe; fe = zlistx_next(self->frontends)) {
        if (strcmp(fe->pipeline, msg->pipeline) || fe->closing) {
            continue;
        }
        bool kept = false;
        size_t index;
        json_t *r;
        json_array_foreach(msg->receivers, index, r)
        {
            kept |= !strcmp(json_string_value(json_object_get(r, "node")), fe->node) &&
                    !strcmp(json_string_value(json_object_get(r, "endpoint")), fe->endpoint);
        }
        if (!kept) {
            s_close_frontend(self, fe);
        }
    }
    size_t index;
    json_t *r;
    json_array_foreach(msg->receivers, index, r)
    {
        const char *node = json_string_value(json_object_get(r, "node"));
        const char *endpoint = json_string_value(json_object_get(r, "endpoint"));
        bool ack = json_is_true(json_object_get(r, "ack"));
        if (!node || !endpoint) {
            continue;
        }
        bool exists = false;
        for (frontend_t *fe = zlistx_first(self->frontends); fe; fe = zlistx_next(self->frontends)) {
            exists |= !fe->closing && !strcmp(fe->pipeline, msg->pipeline) &&
                      !strcmp(fe->node, node) && !strcmp(fe->endpoint, endpoint);
        }
        if (exists) {
            continue;
        }
        frontend_t *fe = calloc(1, sizeof *fe);
        fe->pipeline = strdup(msg->pipeline);
        fe->node = strdup(node);
        fe->endpoint = strdup(endpoint);
        fe->ack = ack;
        fe->pull = zsock_new(ack ? ZMQ_ROUTER : ZMQ_PULL);
        zsock_set_linger(fe->pull, 0);
        zsock_set_rcvhwm(fe->pull, s_front_door_hwm(self));
        //  Up to twice the limit a message arrives and is refused with a reason;
        //  past that libzmq drops the connection: memory stays bounded.
        zsock_set_maxmsgsize(fe->pull, self->max_message_bytes * 2);
        drv_msg_t header;
        drv_msg_init(&header, DRV_MSG_BATCH);
        drv_msg_set_str(&header, DRV_F_NODE, node);
        char *data;
        size_t size;
        drv_msg_encode(&header, &data, &size);
        fe->header = zframe_new(data, size);
        fe->route = s_route_new(msg->pipeline, node, endpoint, fe->header);
        free(data);
        drv_msg_clear(&header);
        //  Binding an ipc endpoint unlinks whatever has its name: validation
        //  refused a file that is not a socket, and so does the bind, in
        //  case one appeared since.
        struct stat st;
        bool not_socket = !strncmp(endpoint, "ipc://", 6) && lstat(endpoint + 6, &st) == 0 && !S_ISSOCK(st.st_mode);
        if (not_socket || zsock_bind(fe->pull, "%s", endpoint) < 0) {
            char reason[300];
            snprintf(reason, sizeof reason, "cannot bind %s: %s", endpoint,
                     not_socket ? "it exists and is not a socket" : zmq_strerror(zmq_errno()));
            drv_error("front door failed pipeline=%s node=%s reason=\"%s\"", fe->pipeline, node, reason);
            s_reply_bound(self, fe, false, reason);
            s_frontend_free((void **)&fe);
            continue;
        }
        drv_info("front door open pipeline=%s node=%s endpoint=%s", fe->pipeline, node, endpoint);
        s_reply_bound(self, fe, true, NULL);
        zlistx_add_end(self->frontends, fe);
    }
}

static void s_handle_control(broker_t *self)
{
    zframe_t *frame = zframe_recv(self->control);
    if (!frame) {
        return;
    }
    drv_msg_t msg;
    char err[200];
    if (drv_msg_decode(&msg, zframe_data(frame), zframe_size(frame), err, sizeof err) != 0) {
        drv_warn("malformed control message reason=\"%s\"", err);
        zframe_destroy(&frame);
        return;
    }
    zframe_destroy(&frame);
    instance_t *inst;
    switch (msg.type) {
    case DRV_MSG_PIPELINE_SET:
        s_pipeline_set(self, &msg);
        break;
    case DRV_MSG_PIPELINE_DEL:
        for (frontend_t *fe = zlistx_first(self->frontends); fe; fe = zlistx_next(self->frontends)) {
            if (!strcmp(fe->pipeline, msg.pipeline)) {
                s_close_frontend(self, fe);
            }
        }
        break;
    case DRV_MSG_INSTANCE_ADD:
        inst = s_instance(self, msg.instance);
        free(inst->pipeline);
        inst->pipeline = strdup(msg.pipeline);
        if (inst->deleted_at_ms) {
            //  Restarted under the same id before the old one was forgotten.
            s_orphan_unacked(self, inst, "instance restarted");
            inst->deleted_at_ms = 0;
        }
        inst->drained_clean = false;
        inst->routable = true;
        inst->drain_pending = false;
        json_decref(inst->nodes);
        inst->nodes = json_is_array(msg.receivers) ? json_incref(msg.receivers) : NULL;
        inst->next_sync_ms = 0; // sync at once if it has not granted us credit
        drv_info("routing to instance=%s", inst->id);
        break;
    case DRV_MSG_INSTANCE_DRAIN:
        inst = s_instance(self, msg.instance);
        if (!inst->pipeline) {
            inst->pipeline = strdup(msg.pipeline);
        }
        if (s_pipeline_closing(self, inst->pipeline)) {
            inst->drain_pending = true; // stays routable until the queue is flushed
        } else {
            inst->routable = false;
            s_send_marker(self, inst);
        }
        break;
    case DRV_MSG_INSTANCE_DEL:
        inst = zhashx_lookup(self->instances, msg.instance);
        if (inst) {
            inst->routable = false;
            inst->deleted_at_ms = drv_time_mono_ms(); // finished in s_tick, after ACK_GRACE_MS
        }
        break;
    default:
        drv_warn("unexpected control message type=%s", drv_msg_type_name(msg.type));
        break;
    }
    drv_msg_clear(&msg);
}

static frontend_t *s_frontend_by_endpoint(broker_t *self, const char *endpoint)
{
    for (frontend_t *fe = zlistx_first(self->frontends); fe; fe = zlistx_next(self->frontends)) {
        if (!strcmp(fe->endpoint, endpoint)) {
            return fe;
        }
    }
    return NULL;
}

static void s_handle_backend(broker_t *self)
{
    zmsg_t *zmsg = zmsg_recv(self->backend);
    if (!zmsg) {
        return;
    }
    char *identity = zmsg_popstr(zmsg);
    zframe_t *body = zmsg_first(zmsg);
    drv_msg_t msg;
    char err[200];
    if (identity && body &&
        drv_msg_decode(&msg, zframe_data(body), zframe_size(body), err, sizeof err) == 0) {
        if (msg.type == DRV_MSG_DRAINED) {
            //  After its last ack, on the same pipe: nothing it got is unexported.
            instance_t *inst = s_instance(self, identity);
            inst->drained_clean = true;
            zlistx_purge(inst->unacked);
        } else if (msg.type == DRV_MSG_CREDIT) {
            instance_t *inst = s_instance(self, identity);
            if (msg.synced) {
                //  The answer to our SYNC, behind the acks for everything we
                //  sent before it: what is unacked now went out after the
                //  SYNC, is in flight to the instance and uses its window.
                int64_t in_flight = (int64_t)zlistx_size(inst->unacked);
                msg.n = msg.n > in_flight ? msg.n - in_flight : 0;
            } else if (msg.reset) {
                //  A new process behind this id: nothing sent before can be
                //  acknowledged any more.
                s_orphan_unacked(self, inst, "new incarnation");
            } else {
                //  Each credit returned is one batch exported: acknowledged.
                for (int64_t k = 0; k < msg.n && zlistx_size(inst->unacked) > 0; k++) {
                    pending_t *done = zlistx_first(inst->unacked);
                    if (done->reply_to) {
                        frontend_t *fe = s_frontend_by_endpoint(self, done->route->endpoint);
                        if (fe) {
                            s_answer_producer(fe, done->reply_to, done->msg_id, NULL);
                        }
                    }
                    zlistx_delete(inst->unacked, zlistx_cursor(inst->unacked));
                }
            }
            inst->credit = msg.reset ? msg.n : inst->credit + msg.n;
            if (!inst->credit_known) {
                drv_info("instance connected instance=%s credit=%lld", inst->id, (long long)inst->credit);
            }
            inst->credit_known = true;
        }
        drv_msg_clear(&msg);
    } else {
        drv_warn("malformed message on backend from=%s", identity ? identity : "?");
    }
    free(identity);
    zmsg_destroy(&zmsg);
}

//  What an instance will never acknowledge (it died, or a new process took its
//  id) goes to the redelivery queue.
static void s_orphan_unacked(broker_t *self, instance_t *inst, const char *why)
{
    size_t lost = zlistx_size(inst->unacked);
    if (lost == 0 || inst->drained_clean) {
        zlistx_purge(inst->unacked);
        return;
    }
    drv_warn("redelivering unacknowledged batches instance=%s batches=%zu reason=\"%s\"", inst->id, lost, why);
    pending_t *pending;
    while ((pending = zlistx_detach(inst->unacked, NULL))) {
        zlistx_add_end(self->redeliver, pending);
    }
}

//  Sends batches of dead instances to live ones with credit, oldest first.
static void s_redeliver(broker_t *self)
{
    pending_t *pending = zlistx_first(self->redeliver);
    while (pending) {
        instance_t *inst = s_pick_node(self, pending->route->pipeline, pending->route->node);
        if (!inst) {
            pending = zlistx_next(self->redeliver);
            continue;
        }
        void *cursor = zlistx_cursor(self->redeliver);
        pending_t *taken = zlistx_detach(self->redeliver, cursor);
        if (s_send_batch(self, inst, taken->route, &taken->payload, taken) != 0) {
            inst->routable = false;
            zlistx_add_start(self->redeliver, taken);
            return;
        }
        s_pending_free((void **)&taken);
        pending = zlistx_first(self->redeliver);
    }
}

//  Timers: SYNC for instances that never granted us credit (we restarted),
//  finishing closed frontends, and the heartbeat to droverd.
static void s_tick(broker_t *self)
{
    int64_t now = drv_time_mono_ms();
    for (instance_t *inst = zhashx_first(self->instances); inst; inst = zhashx_next(self->instances)) {
        if (inst->marker_pending && now >= inst->next_marker_ms) {
            s_send_marker(self, inst);
        }
        if (inst->routable && !inst->credit_known && now >= inst->next_sync_ms) {
            drv_msg_t msg;
            drv_msg_init(&msg, DRV_MSG_SYNC);
            s_send_msg(self->backend, inst->id, &msg, false); // fails until it connects
            drv_msg_clear(&msg);
            inst->next_sync_ms = now + SYNC_RETRY_MS;
        }
    }
    //  Instances droverd reported gone: after the grace, what they never
    //  acknowledged goes to another instance of the pipeline (at least once).
    //  (Collected first: deleting moves the table's cursor.)
    zlistx_t *gone = NULL;
    for (instance_t *inst = zhashx_first(self->instances); inst; inst = zhashx_next(self->instances)) {
        if (inst->deleted_at_ms && now - inst->deleted_at_ms >= ACK_GRACE_MS) {
            gone = gone ? gone : zlistx_new();
            zlistx_add_end(gone, inst);
        }
    }
    for (instance_t *inst = gone ? zlistx_first(gone) : NULL; inst; inst = zlistx_next(gone)) {
        s_orphan_unacked(self, inst, "instance exited");
        zhashx_delete(self->instances, inst->id);
    }
    zlistx_destroy(&gone);
    s_redeliver(self);
    //  First find the closing frontends that are done, then delete them:
    //  deleting moves the list's cursor.
    zlistx_t *finished = NULL;
    for (frontend_t *fe = zlistx_first(self->frontends); fe; fe = zlistx_next(self->frontends)) {
        if (!fe->closing) {
            continue;
        }
        bool empty = false;
        if (s_has_credit(self, fe)) {
            s_forward(self, fe, &empty);
        }
        if (empty || now >= fe->close_deadline_ms) {
            finished = finished ? finished : zlistx_new();
            zlistx_add_end(finished, fe);
        }
    }
    for (frontend_t *fe = finished ? zlistx_first(finished) : NULL; fe; fe = zlistx_next(finished)) {
        drv_info("front door closed pipeline=%s node=%s accepted_batches=%lld", fe->pipeline,
                 fe->node, (long long)fe->batches);
        char *pipeline = strdup(fe->pipeline);
        zlistx_delete(self->frontends, zlistx_find(self->frontends, fe));
        if (!s_pipeline_closing(self, pipeline)) {
            for (instance_t *inst = zhashx_first(self->instances); inst;
                 inst = zhashx_next(self->instances)) {
                if (inst->drain_pending && inst->pipeline && !strcmp(inst->pipeline, pipeline)) {
                    inst->routable = false;
                    s_send_marker(self, inst);
                }
            }
        }
        free(pipeline);
    }
    zlistx_destroy(&finished);
    if (now >= self->next_heartbeat_ms) {
        drv_msg_t msg;
        drv_msg_init(&msg, DRV_MSG_HEARTBEAT);
        drv_msg_set_str(&msg, DRV_F_INSTANCE, "broker");
        drv_msg_set_int(&msg, DRV_F_BATCHES, self->forwarded);
        drv_msg_set_int(&msg, DRV_F_ERRORS, self->refused);
        s_send_msg(self->control, NULL, &msg, false);
        drv_msg_clear(&msg);
        self->next_heartbeat_ms = now + HEARTBEAT_MS;
    }
}

//  How long the loop may sleep: until the next heartbeat, retry, grace or
//  closing front door; an idle broker wakes about once a second.
static long s_next_wait(broker_t *self)
{
    int64_t now = drv_time_mono_ms();
    int64_t next = self->next_heartbeat_ms;
    for (instance_t *inst = zhashx_first(self->instances); inst; inst = zhashx_next(self->instances)) {
        if (inst->marker_pending && inst->next_marker_ms < next) {
            next = inst->next_marker_ms;
        }
        if (inst->routable && !inst->credit_known && inst->next_sync_ms < next) {
            next = inst->next_sync_ms;
        }
        if (inst->deleted_at_ms && inst->deleted_at_ms + ACK_GRACE_MS < next) {
            next = inst->deleted_at_ms + ACK_GRACE_MS;
        }
    }
    for (frontend_t *fe = zlistx_first(self->frontends); fe; fe = zlistx_next(self->frontends)) {
        if (fe->closing) {
            next = now; // flushing: keep turning until it is done
        }
    }
    if (zlistx_size(self->redeliver) > 0 && next > now + 10) {
        next = now + 10; // waiting for an instance with credit to take them
    }
    return next > now ? (long)(next - now) : 0;
}

int drv_broker_run(const char *control_endpoint, const char *data_endpoint, const drv_broker_limits_t *limits)
{
    struct sigaction action = {.sa_handler = s_on_signal};
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);

    broker_t self = {.max_message_bytes = limits->max_message_bytes,
                     .front_door_buffer_bytes = limits->front_door_buffer_bytes};
    int rc = DRV_BROKER_EXIT_OK;
    self.instances = zhashx_new();
    zhashx_set_destructor(self.instances, s_instance_free);
    self.redeliver = zlistx_new();
    zlistx_set_destructor(self.redeliver, s_pending_free);
    self.frontends = zlistx_new();
    zlistx_set_destructor(self.frontends, s_frontend_free);
    zlistx_set_comparator(self.frontends, s_same_pointer);
    self.control = zsock_new(ZMQ_DEALER);
    zsock_set_identity(self.control, "broker");
    zsock_set_linger(self.control, 1000);
    self.backend = zsock_new(ZMQ_ROUTER);
    zsock_set_router_mandatory(self.backend, 1);
    zsock_set_router_handover(self.backend, 1); // a restarted instance keeps its id
    zsock_set_linger(self.backend, 1000);
    if (zsock_bind(self.backend, "%s", data_endpoint) < 0) {
        drv_error("cannot bind backend endpoint=%s reason=\"%s\"", data_endpoint,
                  zmq_strerror(zmq_errno()));
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
    s_send_msg(self.control, NULL, &hello, false);
    drv_msg_clear(&hello);
    drv_info("started pid=%d backend=%s", getpid(), data_endpoint);

    //  As many poll items as there are front doors, however many that is.
    zmq_pollitem_t *items = NULL;
    frontend_t **polled = NULL;
    size_t capacity = 0;
    while (!s_terminating) {
        size_t needed = zlistx_size(self.frontends) + 2;
        if (needed > capacity) {
            capacity = needed * 2;
            items = realloc(items, capacity * sizeof *items);
            polled = realloc(polled, capacity * sizeof *polled);
        }
        int count = 0;
        items[count++] = (zmq_pollitem_t){zsock_resolve(self.control), 0, ZMQ_POLLIN, 0};
        items[count++] = (zmq_pollitem_t){zsock_resolve(self.backend), 0, ZMQ_POLLIN, 0};
        for (frontend_t *fe = zlistx_first(self.frontends); fe; fe = zlistx_next(self.frontends)) {
            if (s_has_credit(&self, fe)) {
                polled[count] = fe;
                items[count++] = (zmq_pollitem_t){zsock_resolve(fe->pull), 0, ZMQ_POLLIN, 0};
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
                    s_handle_backend(&self);
                }
            }
            if (items[0].revents & ZMQ_POLLIN) {
                while (zsock_events(self.control) & ZMQ_POLLIN) {
                    s_handle_control(&self);
                }
            }
            for (int i = 2; i < count; i++) {
                if (items[i].revents & ZMQ_POLLIN) {
                    bool empty;
                    s_forward(&self, polled[i], &empty);
                }
            }
        }
        s_tick(&self);
    }
    drv_info("stopping forwarded_batches=%lld", (long long)self.forwarded);
    free(items);
    free(polled);
done:
    zlistx_destroy(&self.frontends);
    zlistx_destroy(&self.redeliver);
    zhashx_destroy(&self.instances);
    zsock_destroy(&self.backend);
    zsock_destroy(&self.control);
    return rc;
}
