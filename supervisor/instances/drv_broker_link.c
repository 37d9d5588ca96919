/*  drv_broker_link — droverd's side of the broker: its process, and the
    routing table droverd keeps it in step with.

    droverd is the source of truth for routing. When the broker (re)connects it
    gets the whole table again: every pipeline's receivers and every ready
    instance. Instances that were draining when a broker died get their DRAIN
    straight from droverd, since the new broker never routed to them. */
#include "drv_broker_link.h"
#include "drv_spawn.h"
#include "drv_registry.h"
#include "drv_events.h"

#include "drover/drv_log.h"
#include "drover/drv_msg.h"
#include "drover/drv_spec.h"
#include "drover/drv_time.h"
#include "drover/drv_msg_send.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define BROKER_BACKOFF_INITIAL_MS 100
#define BROKER_BACKOFF_MAX_MS 5000
#define BROKER_STABLE_MS 10000

drv_broker_link_t *drv_broker_link_new(void)
{
    drv_broker_link_t *self = calloc(1, sizeof *self);
    if (!self) {
        abort();
    }
    return self;
}

void drv_broker_link_destroy(drv_broker_link_t **self_p)
{
    if (self_p && *self_p) {
        free(*self_p);
        *self_p = NULL;
    }
}

void drv_broker_stop(drv_engine_t *engine)
{
    if (!engine->broker->stopping) {
        engine->broker->stopping = true;
        if (engine->broker->pid > 0) {
            kill(engine->broker->pid, SIGTERM);
        }
    }
}

bool drv_broker_stopped(drv_engine_t *engine)
{
    return engine->broker->stopping && engine->broker->pid == 0;
}

bool drv_broker_is(drv_engine_t *engine, pid_t pid)
{
    return pid > 0 && engine->broker && pid == engine->broker->pid;
}

void drv_broker_kill(drv_engine_t *engine)
{
    if (engine->broker && engine->broker->pid > 0) {
        kill(engine->broker->pid, SIGKILL);
    }
}

void drv_broker_start(drv_engine_t *engine)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/drover-broker", engine->bin_dir);
    char max_message[32];
    snprintf(max_message, sizeof max_message, "%d", engine->config->max_message_bytes);
    char front_door[32];
    snprintf(front_door, sizeof front_door, "%lld", (long long)engine->config->front_door_buffer_bytes);
    //  Its forwarded count is a metric: at least once a second, as fresh as
    //  the instances' counters when they heartbeat more often.
    char heartbeat[32];
    int heartbeat_ms = engine->config->heartbeat_interval_ms;
    snprintf(heartbeat, sizeof heartbeat, "%d", heartbeat_ms < 1000 ? heartbeat_ms : 1000);
    char *argv[] = {"drover-broker",
                    "--control",
                    engine->control_endpoint,
                    "--data",
                    engine->data_endpoint,
                    "--max-message-bytes",
                    max_message,
                    "--front-door-buffer-bytes",
                    front_door,
                    "--heartbeat-ms",
                    heartbeat,
                    NULL};
    char err[300];
    engine->broker->restart_at_ms = 0;
    pid_t pid = drv_spawn(path, argv, -1, NULL, 0, err, sizeof err);
    if (pid < 0) {
        drv_error("broker spawn failed reason=\"%s\"", err);
        drv_broker_on_exit(engine, 111 << 8);
        return;
    }
    engine->broker->pid = pid;
    engine->broker->started_mono_ms = drv_time_mono_ms();
    drv_info("broker started pid=%d", pid);
    drv_events_publish(engine, "broker.started", NULL, NULL, json_pack("{s:i}", "pid", pid));
}

void drv_broker_adopt(drv_engine_t *engine, pid_t pid)
{
    if (pid <= 0) {
        drv_broker_start(engine);
        return;
    }
    //  Its connection comes back by itself, but it said HELLO to the droverd
    //  before: it is replaced at once, and the new one gets the whole table.
    engine->broker->pid = pid;
    engine->broker->connected = false;
    engine->broker->renewing = true;
    engine->broker->started_mono_ms = drv_time_mono_ms();
    drv_info("broker adopted pid=%d: replacing it with the new binary", pid);
    kill(pid, SIGTERM);
}

void drv_broker_on_exit(drv_engine_t *engine, int status)
{
    int code = drv_spawn_exit_code(status);
    engine->broker->pid = 0;
    engine->broker->connected = false;
    bool renewing = engine->broker->renewing && !engine->shutting_down;
    engine->broker->renewing = false;
    drv_events_publish(engine, "broker.exited", NULL, NULL,
                       json_pack("{s:o, s:o, s:b}", "exit_code", code < 128 ? json_integer(code) : json_null(),
                                 "signal", code > 128 ? json_integer(code - 128) : json_null(), "expected",
                                 engine->shutting_down || renewing));
    if (renewing) {
        drv_info("broker replaced: the old one exited exit=%d", code);
        drv_broker_start(engine);
        return;
    }
    if (engine->shutting_down) {
        drv_info("broker exited exit=%d", code);
        return;
    }
    int64_t now = drv_time_mono_ms();
    if (now - engine->broker->started_mono_ms > BROKER_STABLE_MS || engine->broker->backoff_ms == 0) {
        engine->broker->backoff_ms = BROKER_BACKOFF_INITIAL_MS;
    } else if (engine->broker->backoff_ms < BROKER_BACKOFF_MAX_MS) {
        engine->broker->backoff_ms *= 2;
    }
    engine->broker->restarts++;
    engine->broker->restart_at_ms = now + engine->broker->backoff_ms;
    drv_warn("broker exited, restarting exit=%d in_ms=%lld restarts=%d", code, (long long)engine->broker->backoff_ms,
             engine->broker->restarts);
}

static void s_send(drv_engine_t *engine, drv_msg_t *msg)
{
    if (engine->broker->connected) {
        drv_msg_send(engine->control, "broker", msg, true);
    }
}

//  Every front door some live generation needs: while a replace overlaps two
//  generations, the union of both.
static json_t *s_receivers(drv_pipeline_t *pipeline)
{
    json_t *receivers = drv_spec_zmq_receivers(pipeline->spec);
    for (drv_instance_t *inst = zlistx_first(pipeline->instances); inst; inst = zlistx_next(pipeline->instances)) {
        json_t *more = drv_spec_zmq_receivers(inst->spec);
        size_t i;
        json_t *r;
        json_array_foreach(more, i, r)
        {
            bool known = false;
            size_t k;
            json_t *have;
            json_array_foreach(receivers, k, have)
            {
                known |= json_equal(have, r);
            }
            if (!known) {
                json_array_append(receivers, r);
            }
        }
        json_decref(more);
    }
    return receivers;
}

void drv_broker_pipeline_set(drv_engine_t *engine, drv_pipeline_t *pipeline)
{
    drv_msg_t msg;
    drv_msg_init(&msg, DRV_MSG_PIPELINE_SET);
    drv_msg_set_str(&msg, DRV_F_PIPELINE, pipeline->key);
    json_t *receivers = s_receivers(pipeline);
    drv_msg_set_json(&msg, DRV_F_RECEIVERS, receivers);
    json_decref(receivers);
    s_send(engine, &msg);
    drv_msg_clear(&msg);
}

void drv_broker_pipeline_del(drv_engine_t *engine, drv_pipeline_t *pipeline)
{
    drv_msg_t msg;
    drv_msg_init(&msg, DRV_MSG_PIPELINE_DEL);
    drv_msg_set_str(&msg, DRV_F_PIPELINE, pipeline->key);
    s_send(engine, &msg);
    drv_msg_clear(&msg);
}

void drv_broker_instance(drv_engine_t *engine, drv_instance_t *inst, int msg_type)
{
    drv_msg_t msg;
    drv_msg_init(&msg, (drv_msg_type_t)msg_type);
    drv_msg_set_str(&msg, DRV_F_PIPELINE, inst->pipeline->key);
    drv_msg_set_str(&msg, DRV_F_INSTANCE, inst->id);
    if (msg_type == DRV_MSG_INSTANCE_ADD) {
        json_t *receivers = drv_spec_zmq_receivers(inst->spec);
        json_t *nodes = json_array();
        size_t i;
        json_t *r;
        json_array_foreach(receivers, i, r)
        {
            json_array_append(nodes, json_object_get(r, "node"));
        }
        drv_msg_set_json(&msg, DRV_F_RECEIVERS, nodes);
        json_decref(nodes);
        json_decref(receivers);
    }
    s_send(engine, &msg);
    drv_msg_clear(&msg);
}

static void s_replay_instance(drv_engine_t *engine, drv_instance_t *inst, void *arg)
{
    (void)arg;
    if (!inst->has_zmq) {
        return;
    }
    if (inst->state == DRV_INST_READY) {
        drv_broker_instance(engine, inst, DRV_MSG_INSTANCE_ADD);
    } else if (inst->state == DRV_INST_DRAINING) {
        drv_msg_t msg;
        drv_msg_init(&msg, DRV_MSG_DRAIN);
        drv_msg_send(engine->control, inst->id, &msg, true);
        drv_msg_clear(&msg);
    }
}

void drv_broker_on_message(drv_engine_t *engine, void *message)
{
    drv_msg_t *msg = message;
    switch (msg->type) {
    case DRV_MSG_HELLO:
        if (msg->pid != engine->broker->pid) {
            drv_warn("hello from unexpected broker pid=%lld", (long long)msg->pid);
            return;
        }
        engine->broker->connected = true;
        drv_info("broker connected pid=%d", engine->broker->pid);
        if (engine->groups) {
            size_t count;
            drv_pipeline_t **all = drv_registry_pipelines(engine, &count);
            for (size_t k = 0; k < count; k++) {
                drv_pipeline_t *p = all[k];
                if (p->has_zmq && !p->shutdown_active && (p->running || p->active)) { // not a stopped one
                    drv_broker_pipeline_set(engine, p);
                }
            }
            free(all);
        }
        drv_registry_each_instance(engine, s_replay_instance, NULL);
        break;
    case DRV_MSG_BOUND: {
        char *sep = strchr(msg->pipeline, ':');
        if (!sep) {
            return;
        }
        *sep = 0;
        drv_pipeline_t *pipeline = drv_registry_pipeline(engine, msg->pipeline, sep + 1);
        *sep = ':';
        if (!pipeline) {
            return;
        }
        drv_registry_touch(engine, pipeline);
        if (msg->ok) {
            pipeline->frontend_error[0] = 0;
        } else {
            snprintf(pipeline->frontend_error, sizeof pipeline->frontend_error, "node %s: %s", msg->node,
                     msg->reason ? msg->reason : "bind failed");
            drv_error("receiver endpoint unavailable pipeline=%s node=%s reason=\"%s\"", msg->pipeline, msg->node,
                      msg->reason ? msg->reason : "");
        }
        break;
    }
    case DRV_MSG_HEARTBEAT:
        engine->broker->forwarded = msg->batches;
        engine->broker->refused = msg->errors;
        break;
    default:
        drv_warn("unexpected message from broker type=%s", drv_msg_type_name(msg->type));
        break;
    }
}

int64_t drv_broker_tick(drv_engine_t *engine)
{
    if (engine->broker->pid > 0 || engine->shutting_down || engine->broker->restart_at_ms == 0) {
        return -1;
    }
    int64_t now = drv_time_mono_ms();
    if (now >= engine->broker->restart_at_ms) {
        drv_broker_start(engine);
        return -1;
    }
    return engine->broker->restart_at_ms - now;
}
