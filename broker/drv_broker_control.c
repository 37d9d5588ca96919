/*  drv_broker_control — droverd's orders: which front doors a pipeline has
    (PIPELINE_SET, PIPELINE_DEL) and which instances to route to, drain or
    forget (INSTANCE_ADD, INSTANCE_DRAIN, INSTANCE_DEL). */
#include "drv_broker_core.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <string.h>

//  True when a front door of `pipeline` (of any, when NULL) is closing.
bool drv_broker_closing(drv_broker_t *self, const char *pipeline)
{
    for (drv_front_door_t *fe = zlistx_first(self->front_doors); fe; fe = zlistx_next(self->front_doors)) {
        if (fe->closing && (!pipeline || strcmp(fe->pipeline, pipeline) == 0)) {
            return true;
        }
    }
    return false;
}

static void s_reply_bound(drv_broker_t *self, const char *pipeline, const char *node, const char *endpoint,
                          const char *reason)
{
    drv_msg_t msg;
    drv_msg_init(&msg, DRV_MSG_BOUND);
    drv_msg_set_str(&msg, DRV_F_PIPELINE, pipeline);
    drv_msg_set_str(&msg, DRV_F_NODE, node);
    drv_msg_set_str(&msg, DRV_F_ENDPOINT, endpoint);
    drv_msg_set_bool(&msg, DRV_F_OK, reason == NULL);
    if (reason) {
        drv_msg_set_str(&msg, DRV_F_REASON, reason);
    }
    drv_msg_send(self->control, NULL, &msg, false);
    drv_msg_clear(&msg);
}

//  True when `receivers` (of PIPELINE_SET) has (node, endpoint).
static bool s_listed(json_t *receivers, const char *node, const char *endpoint)
{
    size_t index;
    json_t *r;
    json_array_foreach(receivers, index, r)
    {
        const char *n = json_string_value(json_object_get(r, "node"));
        const char *e = json_string_value(json_object_get(r, "endpoint"));
        if (n && e && !strcmp(n, node) && !strcmp(e, endpoint)) {
            return true;
        }
    }
    return false;
}

static bool s_open(drv_broker_t *self, const char *pipeline, const char *node, const char *endpoint)
{
    for (drv_front_door_t *fe = zlistx_first(self->front_doors); fe; fe = zlistx_next(self->front_doors)) {
        if (!fe->closing && !strcmp(fe->pipeline, pipeline) && !strcmp(fe->node, node) &&
            !strcmp(fe->endpoint, endpoint)) {
            return true;
        }
    }
    return false;
}

//  PIPELINE_SET: closes the pipeline's front doors the list no longer has,
//  binds the new ones and tells droverd how each bind went.
static void s_pipeline_set(drv_broker_t *self, drv_msg_t *msg)
{
    for (drv_front_door_t *fe = zlistx_first(self->front_doors); fe; fe = zlistx_next(self->front_doors)) {
        if (!strcmp(fe->pipeline, msg->pipeline) && !s_listed(msg->receivers, fe->node, fe->endpoint)) {
            drv_front_door_close(fe, CLOSE_FLUSH_MS);
        }
    }
    size_t index;
    json_t *r;
    json_array_foreach(msg->receivers, index, r)
    {
        const char *node = json_string_value(json_object_get(r, "node"));
        const char *endpoint = json_string_value(json_object_get(r, "endpoint"));
        if (!node || !endpoint || s_open(self, msg->pipeline, node, endpoint)) {
            continue;
        }
        char reason[300];
        drv_front_door_t *fe =
            drv_front_door_new(msg->pipeline, node, endpoint, json_is_true(json_object_get(r, "ack")),
                               self->max_message_bytes, self->front_door_buffer_bytes, reason, sizeof reason);
        if (!fe) {
            drv_error("front door failed pipeline=%s node=%s reason=\"%s\"", msg->pipeline, node, reason);
            s_reply_bound(self, msg->pipeline, node, endpoint, reason);
            continue;
        }
        drv_info("front door open pipeline=%s node=%s endpoint=%s", fe->pipeline, node, endpoint);
        s_reply_bound(self, msg->pipeline, node, endpoint, NULL);
        zlistx_add_end(self->front_doors, fe);
    }
}

void drv_broker_handle_control(drv_broker_t *self)
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
    drv_instance_t *inst;
    switch (msg.type) {
    case DRV_MSG_PIPELINE_SET:
        s_pipeline_set(self, &msg);
        break;
    case DRV_MSG_PIPELINE_DEL:
        for (drv_front_door_t *fe = zlistx_first(self->front_doors); fe; fe = zlistx_next(self->front_doors)) {
            if (!strcmp(fe->pipeline, msg.pipeline)) {
                drv_front_door_close(fe, CLOSE_FLUSH_MS);
            }
        }
        break;
    case DRV_MSG_INSTANCE_ADD:
        inst = drv_instances_get(self->instances, msg.instance);
        if (inst->deleted_at_ms) {
            //  Restarted under the same id before the old one was forgotten.
            drv_broker_orphan(self, inst, "instance restarted");
            inst->deleted_at_ms = 0;
        }
        drv_ledger_open(self->ledger, inst->id);
        drv_instance_route(inst, msg.pipeline, msg.receivers);
        drv_info("routing to instance=%s", inst->id);
        break;
    case DRV_MSG_INSTANCE_DRAIN:
        inst = drv_instances_get(self->instances, msg.instance);
        if (!inst->pipeline) {
            inst->pipeline = strdup(msg.pipeline);
        }
        if (drv_broker_closing(self, inst->pipeline)) {
            inst->drain_pending = true; // stays routable until the queue is flushed
        } else {
            inst->routable = false;
            inst->unreachable = false;
            drv_broker_send_marker(self, inst);
        }
        break;
    case DRV_MSG_INSTANCE_DEL:
        inst = drv_instances_lookup(self->instances, msg.instance);
        if (inst) {
            inst->routable = false;
            inst->unreachable = false;
            inst->deleted_at_ms = drv_time_mono_ms(); // finished in s_tick, after ACK_GRACE_MS
        }
        break;
    default:
        drv_warn("unexpected control message type=%s", drv_msg_type_name(msg.type));
        break;
    }
    drv_msg_clear(&msg);
}
