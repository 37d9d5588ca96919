/*  drv_lifecycle — the life of one instance slot, read top to bottom:

      start ──spawn──> STARTING ──READY──> READY ──retire──> DRAINING ──exit──> gone
                          │                  │ 3 missed heartbeats: SIGKILL
                          └──────exit────────┴──────> FAILED ──backoff──> start

    A crash (an exit nobody asked for) is restarted on the same core and
    generation after an exponential backoff; more than max_restarts within
    window_secs marks the pipeline degraded (and restarts go on, at the longest
    backoff, like a Kubernetes CrashLoopBackOff). */
#include "drv_lifecycle.h"
#include "drv_spawn.h"
#include "drv_registry.h"
#include "drv_zygote_link.h"
#include "drv_broker_link.h"
#include "drv_events.h"

#include "drover/drv_log.h"
#include "drover/drv_msg.h"
#include "drover/drv_spec.h"
#include "drover/drv_time.h"
#include "drover/drv_msg_send.h"

#include <signal.h>
#include <string.h>

#define MISSED_HEARTBEATS 3

static void s_event(drv_engine_t *engine, drv_instance_t *inst, const char *topic, json_t *fields)
{
    json_t *event = fields ? fields : json_object();
    json_object_set_new(event, "instance", json_string(inst->id));
    json_object_set_new(event, "core", json_integer(inst->core));
    json_object_set_new(event, "generation", json_integer(inst->generation));
    json_object_set_new(event, "pid", json_integer(inst->pid));
    drv_events_publish(engine, topic, inst->pipeline->group, inst->pipeline->name, event);
}

static int64_t s_policy(drv_instance_t *inst, const char *policy, const char *key)
{
    return drv_spec_policy(inst->spec, policy, key);
}

//  Restarts of this slot within the restart window, counting now.
static int s_recent(drv_instance_t *inst, int64_t now)
{
    int64_t window_ms = s_policy(inst, "restart", "window_secs") * 1000;
    int count = 0;
    for (int i = 0; i < inst->recent_count; i++) {
        if (now - inst->recent_restarts[i] <= window_ms) {
            count++;
        }
    }
    return count;
}

static void s_schedule_restart(drv_engine_t *engine, drv_instance_t *inst)
{
    int64_t now = drv_time_mono_ms();
    int capacity = (int)(sizeof inst->recent_restarts / sizeof inst->recent_restarts[0]);
    if (inst->recent_count == capacity) {
        memmove(inst->recent_restarts, inst->recent_restarts + 1,
                (capacity - 1) * sizeof inst->recent_restarts[0]);
        inst->recent_count--;
    }
    inst->recent_restarts[inst->recent_count++] = now;
    inst->restarts++;
    int recent = s_recent(inst, now);
    //  A one-off crash restarts at once (as s6 does); a second one within the
    //  window waits initial_backoff_ms, and each further one twice as long.
    int64_t backoff = recent <= 1 ? 0 : s_policy(inst, "restart", "initial_backoff_ms");
    int64_t maximum = s_policy(inst, "restart", "max_backoff_ms");
    for (int i = 2; i < recent && backoff < maximum; i++) {
        backoff *= 2;
    }
    if (backoff > maximum) {
        backoff = maximum;
    }
    inst->state = DRV_INST_FAILED;
    inst->restart_at_ms = now + backoff;
    drv_info("instance restart scheduled instance=%s in_ms=%lld restarts=%d", inst->id,
             (long long)backoff, inst->restarts);
    drv_pipeline_t *pipeline = inst->pipeline;
    int64_t max_restarts = s_policy(inst, "restart", "max_restarts");
    if (recent > max_restarts && !pipeline->degraded) {
        pipeline->degraded = true;
        drv_warn("pipeline degraded pipeline=%s instance=%s restarts=%d window_secs=%lld", pipeline->key,
                 inst->id, recent, (long long)s_policy(inst, "restart", "window_secs"));
        drv_events_publish(engine, "pipeline.degraded", pipeline->group, pipeline->name,
                           json_pack("{s:s, s:i}", "instance", inst->id, "restarts", recent));
    }
}

void drv_lifecycle_start(drv_engine_t *engine, drv_instance_t *inst)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/drover-worker", engine->bin_dir);
    char *argv[] = {inst->id, "--control", engine->control_endpoint, "--instance", inst->id, NULL};
    char err[300];
    inst->restart_at_ms = 0;
    inst->spawned_mono_us = drv_time_mono_us();
    pid_t pid = drv_zygote_spawn(engine, inst->id, inst->core, err, sizeof err);
    if (pid < 0) {
        drv_debug("instance by exec instance=%s reason=\"%s\"", inst->id, err);
        pid = drv_spawn(path, argv, inst->core, err, sizeof err);
    }
    if (pid < 0) {
        drv_error("instance spawn failed instance=%s reason=\"%s\"", inst->id, err);
        snprintf(inst->detail, sizeof inst->detail, "spawn failed: %s", err);
        s_schedule_restart(engine, inst);
        return;
    }
    inst->pid = pid;
    inst->state = DRV_INST_STARTING;
    inst->started_at = drv_time_wall_ms();
    inst->term_at_ms = inst->kill_at_ms = 0;
    drv_info("instance started instance=%s pid=%d core=%d", inst->id, pid, inst->core);
    s_event(engine, inst, "instance.started", NULL);
}

static void s_send_spec(drv_engine_t *engine, drv_instance_t *inst)
{
    drv_msg_t msg;
    drv_msg_init(&msg, DRV_MSG_SPEC);
    drv_msg_set_str(&msg, DRV_F_INSTANCE, inst->id);
    drv_msg_set_str(&msg, DRV_F_PIPELINE, inst->pipeline->key);
    drv_msg_set_int(&msg, DRV_F_GENERATION, inst->generation);
    drv_msg_set_int(&msg, DRV_F_CORE, inst->core);
    drv_msg_set_json(&msg, DRV_F_SPEC, inst->spec);
    drv_msg_set_int(&msg, DRV_F_HEARTBEAT_MS, engine->config->heartbeat_interval_ms);
    drv_msg_set_int(&msg, DRV_F_CREDIT_WINDOW, engine->config->credit_window);
    drv_msg_set_str(&msg, DRV_F_DATA_ENDPOINT, engine->data_endpoint);
    drv_msg_send(engine->control, inst->id, &msg, true);
    drv_msg_clear(&msg);
}

static void s_counters(drv_instance_t *inst, const drv_msg_t *msg)
{
    if (drv_msg_has(msg, DRV_F_RECORDS_IN)) {
        inst->records_in = msg->records_in;
        inst->records_out = msg->records_out;
        inst->errors = msg->errors;
    }
}

void drv_lifecycle_on_message(drv_engine_t *engine, drv_instance_t *inst, void *message)
{
    drv_msg_t *msg = message;
    switch (msg->type) {
    case DRV_MSG_HELLO:
        if (msg->pid != inst->pid) {
            drv_warn("hello from unexpected pid instance=%s pid=%lld expected=%d", inst->id,
                     (long long)msg->pid, inst->pid);
            return;
        }
        s_send_spec(engine, inst);
        break;
    case DRV_MSG_READY:
        if (inst->state != DRV_INST_STARTING) {
            return;
        }
        inst->state = DRV_INST_READY;
        inst->gated = false;
        inst->ready_mono_ms = inst->last_heartbeat_mono = drv_time_mono_ms();
        inst->last_heartbeat_at = drv_time_wall_ms();
        inst->detail[0] = 0;
        //  spawned_at_us (monotonic) lets bench/startup.py line this up with
        //  the worker's own debug-level startup timestamps.
        drv_info("instance ready instance=%s pid=%d startup_us=%lld spawned_at_us=%lld", inst->id, inst->pid,
                 (long long)(drv_time_mono_us() - inst->spawned_mono_us), (long long)inst->spawned_mono_us);
        if (inst->has_zmq) {
            drv_broker_instance(engine, inst, DRV_MSG_INSTANCE_ADD);
        }
        s_event(engine, inst, "instance.ready",
                json_pack("{s:I}", "startup_us", (json_int_t)(drv_time_mono_us() - inst->spawned_mono_us)));
        if (engine->instance_listener) {
            engine->instance_listener(engine, inst, DRV_INST_EV_READY, 0);
        }
        break;
    case DRV_MSG_HEARTBEAT:
        inst->last_heartbeat_mono = drv_time_mono_ms();
        inst->last_heartbeat_at = drv_time_wall_ms();
        s_counters(inst, msg);
        break;
    case DRV_MSG_INIT_FAILED:
        snprintf(inst->detail, sizeof inst->detail, "%s", msg->reason);
        drv_error("instance cannot start instance=%s reason=\"%s\"", inst->id, msg->reason);
        break;
    case DRV_MSG_DRAINED:
        s_counters(inst, msg);
        drv_info("instance drained instance=%s records_in=%lld records_out=%lld", inst->id,
                 (long long)msg->records_in, (long long)msg->records_out);
        break;
    default:
        drv_warn("unexpected message from instance=%s type=%s", inst->id, drv_msg_type_name(msg->type));
        break;
    }
}

void drv_lifecycle_on_exit(drv_engine_t *engine, drv_instance_t *inst, int status)
{
    int code = drv_spawn_exit_code(status);
    inst->last_exit_code = code;
    inst->term_at_ms = inst->kill_at_ms = 0;
    if (inst->has_zmq) {
        drv_broker_instance(engine, inst, DRV_MSG_INSTANCE_DEL);
    }
    s_event(engine, inst, "instance.exited",
            json_pack("{s:o, s:o, s:b}", "exit_code", code < 128 ? json_integer(code) : json_null(),
                      "signal", code > 128 ? json_integer(code - 128) : json_null(), "expected",
                      inst->retiring || engine->shutting_down));
    inst->pid = 0;
    if (engine->instance_listener) {
        engine->instance_listener(engine, inst, DRV_INST_EV_EXITED, code);
    }
    if (inst->retiring || engine->shutting_down) {
        inst->state = DRV_INST_EXITED;
        drv_info("instance exited instance=%s exit=%d", inst->id, code);
        drv_registry_remove_instance(engine, inst);
        return;
    }
    if (inst->detail[0] == 0 || inst->state == DRV_INST_READY) {
        if (code > 128) {
            snprintf(inst->detail, sizeof inst->detail, "killed by signal %d", code - 128);
        } else {
            snprintf(inst->detail, sizeof inst->detail, "exited with code %d", code);
        }
    }
    drv_warn("instance crashed instance=%s exit=%d state=%s detail=\"%s\"", inst->id, code,
             drv_inst_state_name(inst->state), inst->detail);
    if (inst->gated) {
        //  A rollout is waiting for this one: its exit fails the step; the
        //  rollout decides what happens next, not the restart policy.
        inst->state = DRV_INST_FAILED;
        inst->restart_at_ms = 0;
        return;
    }
    s_schedule_restart(engine, inst);
}

void drv_lifecycle_retire(drv_engine_t *engine, drv_instance_t *inst, int64_t drain_timeout_ms)
{
    int64_t now = drv_time_mono_ms();
    inst->retiring = true;
    if (inst->pid == 0) {
        inst->state = DRV_INST_EXITED;
        drv_registry_remove_instance(engine, inst);
        return;
    }
    if (inst->state == DRV_INST_STARTING) {
        //  Nothing was routed to it yet: stop it straight away.
        kill(inst->pid, SIGTERM);
        inst->kill_at_ms = now + DRV_KILL_GRACE_MS;
        return;
    }
    if (inst->state != DRV_INST_READY) {
        return; // already draining
    }
    inst->state = DRV_INST_DRAINING;
    inst->term_at_ms = now + drain_timeout_ms;
    if (inst->has_zmq && engine->broker_connected) {
        //  Through the broker, so the DRAIN marker follows the last batch.
        drv_broker_instance(engine, inst, DRV_MSG_INSTANCE_DRAIN);
    } else {
        drv_msg_t msg;
        drv_msg_init(&msg, DRV_MSG_DRAIN);
        drv_msg_send(engine->control, inst->id, &msg, true);
        drv_msg_clear(&msg);
    }
    drv_info("instance draining instance=%s timeout_ms=%lld", inst->id, (long long)drain_timeout_ms);
}

void drv_lifecycle_kill(drv_engine_t *engine, drv_instance_t *inst)
{
    (void)engine;
    if (inst->pid > 0) {
        kill(inst->pid, SIGKILL);
    }
}

static int64_t s_earliest(int64_t next, int64_t deadline, int64_t now)
{
    if (deadline <= 0) {
        return next;
    }
    int64_t wait = deadline > now ? deadline - now : 0;
    return next < 0 || wait < next ? wait : next;
}

typedef struct {
    int64_t now;
    int64_t next; // ms until the earliest deadline, -1 none
} tick_t;

static void s_tick_instance(drv_engine_t *engine, drv_instance_t *inst, void *arg)
{
    tick_t *tick = arg;
    int64_t now = tick->now;
    if (inst->state == DRV_INST_FAILED && inst->restart_at_ms > 0 && !engine->shutting_down) {
        if (now >= inst->restart_at_ms) {
            drv_lifecycle_start(engine, inst);
        }
        tick->next = s_earliest(tick->next, inst->restart_at_ms, now);
    }
    if (inst->state == DRV_INST_READY && inst->pid > 0) {
        int64_t limit = inst->last_heartbeat_mono +
                        (int64_t)MISSED_HEARTBEATS * engine->config->heartbeat_interval_ms;
        if (now > limit) {
            drv_warn("instance unhealthy: %d heartbeats missed instance=%s pid=%d", MISSED_HEARTBEATS,
                     inst->id, inst->pid);
            snprintf(inst->detail, sizeof inst->detail, "unhealthy: %d heartbeats missed",
                     MISSED_HEARTBEATS);
            kill(inst->pid, SIGKILL);
            inst->last_heartbeat_mono = now; // one kill is enough; the reaper follows
        }
        tick->next = s_earliest(tick->next, limit + 1, now);
    }
    if (inst->term_at_ms > 0 && inst->pid > 0) {
        if (now >= inst->term_at_ms) {
            drv_warn("drain timed out, sending SIGTERM instance=%s pid=%d", inst->id, inst->pid);
            kill(inst->pid, SIGTERM);
            inst->term_at_ms = 0;
            inst->kill_at_ms = now + DRV_KILL_GRACE_MS;
        } else {
            tick->next = s_earliest(tick->next, inst->term_at_ms, now);
        }
    }
    if (inst->kill_at_ms > 0 && inst->pid > 0) {
        if (now >= inst->kill_at_ms) {
            drv_warn("still running after SIGTERM, sending SIGKILL instance=%s pid=%d", inst->id,
                     inst->pid);
            kill(inst->pid, SIGKILL);
            inst->kill_at_ms = 0;
        } else {
            tick->next = s_earliest(tick->next, inst->kill_at_ms, now);
        }
    }
}

int64_t drv_lifecycle_tick(drv_engine_t *engine)
{
    tick_t tick = {drv_time_mono_ms(), -1};
    drv_registry_each_instance(engine, s_tick_instance, &tick);
    //  A degraded pipeline recovers once no slot is over its restart budget.
    if (engine->groups) {
        for (drv_group_t *g = zhashx_first(engine->groups); g; g = zhashx_next(engine->groups)) {
            for (drv_pipeline_t *p = zhashx_first(g->pipelines); p; p = zhashx_next(g->pipelines)) {
                if (!p->degraded) {
                    continue;
                }
                bool over = false;
                int64_t window_ms = drv_spec_policy(p->spec, "restart", "window_secs") * 1000;
                for (drv_instance_t *inst = zlistx_first(p->instances); inst;
                     inst = zlistx_next(p->instances)) {
                    over |= s_recent(inst, tick.now) > drv_spec_policy(p->spec, "restart", "max_restarts");
                    if (inst->recent_count > 0) {
                        tick.next = s_earliest(tick.next,
                                               inst->recent_restarts[inst->recent_count - 1] + window_ms + 1,
                                               tick.now);
                    }
                }
                if (!over) {
                    p->degraded = false;
                    drv_info("pipeline recovered pipeline=%s", p->key);
                    drv_events_publish(engine, "pipeline.recovered", p->group, p->name, NULL);
                }
            }
        }
    }
    return tick.next;
}
