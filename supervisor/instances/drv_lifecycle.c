/*  drv_lifecycle — one instance slot from spawn to exit: feeds what happens
    to it (a message, an exit, a deadline, a retire) into its state table
    (drv_inst_table.c, which decides) and applies the effects the table
    returns: spawning, the spec, routing by the broker, DRAIN, signals, the
    events, removing the slot. */
#include "drv_lifecycle.h"
#include "drv_inst_table.h"
#include "drv_spawn.h"
#include "drv_registry.h"
#include "drv_zygote_link.h"
#include "drv_listeners.h"
#include "drv_broker_link.h"
#include "drv_events.h"
#include "drv_export_health.h"

#include "drover/drv_log.h"
#include "drover/drv_zygote.h"
#include "drover/drv_msg.h"
#include "drover/drv_spec.h"
#include "drover/drv_time.h"
#include "drover/drv_msg_send.h"

#include <signal.h>
#include <string.h>

static void s_event(drv_engine_t *engine, drv_instance_t *inst, const char *topic, json_t *fields)
{
    json_t *event = fields ? fields : json_object();
    json_object_set_new(event, "instance", json_string(inst->id));
    json_object_set_new(event, "core", json_integer(inst->core));
    json_object_set_new(event, "generation", json_integer(inst->generation));
    if (!json_object_get(event, "pid")) {
        json_object_set_new(event, "pid", json_integer(inst->pid));
    }
    drv_events_publish(engine, topic, inst->pipeline->group, inst->pipeline->name, event);
}

static void s_apply(drv_engine_t *engine, drv_instance_t *inst, unsigned fx, const drv_life_input_t *in);

//  Arms inst's timer at its state's deadline. Lazily: a deadline that
//  moved later (every heartbeat moves READY's) leaves the timer where it
//  is; it fires early and drv_lifecycle_tick sets it again. So a heartbeat
//  costs no heap operation, and an idle engine no walk over its instances.
static void s_arm(drv_engine_t *engine, drv_instance_t *inst)
{
    if (!inst->timers) {
        return; // a record made without the registry (tests)
    }
    int64_t at;
    drv_inst_table_deadline(inst, engine->config->heartbeat_interval_ms, &at);
    if (at <= 0) {
        drv_timers_cancel(inst->timers, &inst->timer);
    } else if (!drv_timers_armed(&inst->timer) || at < inst->timer.due) {
        if (drv_timers_set(inst->timers, &inst->timer, at) != 0) {
            drv_error("out of memory: instance=%s has no deadline timer", inst->id);
        }
    }
}

//  Feeds one event into inst's table and applies what it says; then arms
//  the new state's deadline, unless the slot was removed.
static void s_feed(drv_engine_t *engine, drv_instance_t *inst, drv_life_event_t event, drv_life_input_t in)
{
    in.now_ms = drv_time_mono_ms();
    in.engine_stopping = engine->shutting_down;
    in.pid_before = inst->pid;
    drv_pipeline_t *pipeline = inst->pipeline;
    unsigned fx = drv_inst_table_step(inst, event, &in);
    drv_registry_touch(engine, pipeline); // its state, deadline, pid or counters may have changed
    s_apply(engine, inst, fx, &in);
    if (!(fx & DRV_LIFE_FX_REMOVE)) {
        s_arm(engine, inst);
    }
}

//  Starts a process: from the zygote, else fork+exec.
static void s_spawn(drv_engine_t *engine, drv_instance_t *inst)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/drover-worker", engine->bin_dir);
    char *argv[] = {inst->id, "--control", engine->control_endpoint, "--instance", inst->id, NULL};
    char err[300];
    int fds[DRV_ZYGOTE_MAX_FDS];
    size_t nfds = drv_listeners_fds(inst->pipeline, inst->spec, fds, DRV_ZYGOTE_MAX_FDS);
    inst->spawned_mono_us = drv_time_mono_us();
    inst->init_failed = false;
    pid_t pid = drv_zygote_spawn(engine, inst->id, inst->core, fds, nfds, err, sizeof err);
    if (pid < 0) {
        drv_debug("instance by exec instance=%s reason=\"%s\"", inst->id, err);
        pid = drv_spawn(path, argv, inst->core, fds, nfds, err, sizeof err);
    }
    if (pid < 0) {
        s_feed(engine, inst, DRV_LIFE_SPAWN_FAILED, (drv_life_input_t){.reason = err});
        return;
    }
    inst->started_at = drv_time_wall_ms();
    s_feed(engine, inst, DRV_LIFE_SPAWNED, (drv_life_input_t){.pid = pid});
    s_event(engine, inst, "instance.started", NULL);
}

void drv_lifecycle_start(drv_engine_t *engine, drv_instance_t *inst)
{
    s_spawn(engine, inst);
}

void drv_lifecycle_adopt(drv_engine_t *engine, drv_instance_t *inst, pid_t pid, int64_t started_at)
{
    int64_t now = drv_time_mono_ms();
    inst->pid = pid;
    inst->state = DRV_INST_READY;
    inst->adopted = true;
    inst->started_at = started_at;
    inst->ready_mono_ms = now;
    inst->last_heartbeat_mono = now; // its heartbeats come once its control connection is back
    inst->last_heartbeat_at = drv_time_wall_ms();
    drv_registry_touch(engine, inst->pipeline);
    s_arm(engine, inst);
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
    drv_msg_set_str(&msg, DRV_F_BUFFER_DIR, engine->config->buffer_dir);
    drv_msg_set_str(&msg, DRV_F_RUN_DIR, engine->config->run_dir);
    drv_msg_send(engine->control, inst->id, &msg, true);
    drv_msg_clear(&msg);
}

bool drv_lifecycle_tell_taps(drv_engine_t *engine, drv_instance_t *inst)
{
    if (inst->state != DRV_INST_READY && inst->state != DRV_INST_DRAINING) {
        return false; // told when it becomes ready (before, it waits for its spec alone)
    }
    drv_msg_t msg;
    drv_msg_init(&msg, DRV_MSG_TAP);
    json_t *none = json_array();
    drv_msg_set_json(&msg, DRV_F_NODES, inst->pipeline->tap_nodes ? inst->pipeline->tap_nodes : none);
    drv_msg_set_int(&msg, DRV_F_N, DRV_TAP_SAMPLES_PER_SEC);
    bool sent = drv_msg_send(engine->control, inst->id, &msg, true) == 0; // ROUTER_MANDATORY: connected
    drv_msg_clear(&msg);
    json_decref(none);
    return sent;
}

//  A disk buffer's news, from a heartbeat against the one before: damage
//  found (logged by the worker too) is evented.
static void s_buffer_news(drv_engine_t *engine, drv_instance_t *inst, const json_t *now)
{
    const json_t *before = inst->buffer;
    static const char *const counts[] = {"corrupt_segments", "torn_bytes", "unkept_bytes", "odd_files"};
    bool grew = false;
    json_t *news = json_object();
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
        json_int_t value = json_integer_value(json_object_get(now, counts[i]));
        grew |= value > json_integer_value(json_object_get(before, counts[i]));
        json_object_set_new(news, counts[i], json_integer(value));
    }
    if (grew) {
        s_event(engine, inst, "buffer.damaged", news);
    } else {
        json_decref(news);
    }
}

//  The first heartbeat of a process that went on from the counts its
//  crashed predecessor saved with the disk buffer (worker/dag/drv_dag_counts.c):
//  what droverd had from that one is in them, and leaves the totals.
static void s_went_on(drv_instance_t *inst, const drv_msg_t *msg)
{
    drv_pipeline_t *p = inst->pipeline;
    if (drv_msg_has(msg, DRV_F_BUFFER) && json_is_true(json_object_get(msg->buffer, "counts_restored"))) {
        p->retired_in -= inst->ended_in;
        p->retired_out -= inst->ended_out;
        p->retired_errors -= inst->ended_errors;
    }
    inst->ended_in = inst->ended_out = inst->ended_errors = 0;
}

static void s_counters(drv_engine_t *engine, drv_instance_t *inst, const drv_msg_t *msg)
{
    s_went_on(inst, msg);
    if (drv_msg_has(msg, DRV_F_RECORDS_IN)) {
        inst->records_in = msg->records_in;
        inst->records_out = msg->records_out;
        inst->errors = msg->errors;
    }
    if (drv_msg_has(msg, DRV_F_NODES) && json_is_object(msg->nodes)) {
        json_decref(inst->nodes);
        inst->nodes = json_incref(msg->nodes);
        drv_export_health_update(engine, inst);
    }
    if (drv_msg_has(msg, DRV_F_BUFFER) && json_is_object(msg->buffer)) {
        s_buffer_news(engine, inst, msg->buffer);
        json_decref(inst->buffer);
        inst->buffer = json_incref(msg->buffer);
    }
    inst->counter_updates++;
}

//  The process ended: what it counted moves into its pipeline's totals, and
//  a restarted process counts from zero.
static void s_retire_counters(drv_instance_t *inst)
{
    drv_pipeline_t *p = inst->pipeline;
    p->retired_in += inst->records_in;
    p->retired_out += inst->records_out;
    p->retired_errors += inst->errors;
    inst->ended_in = inst->records_in;
    inst->ended_out = inst->records_out;
    inst->ended_errors = inst->errors;
    inst->records_in = inst->records_out = inst->errors = 0;
    json_decref(inst->nodes);
    inst->nodes = NULL;
    p->retired_replayed += json_integer_value(json_object_get(inst->buffer, "replayed"));
    p->retired_dropped += json_integer_value(json_object_get(inst->buffer, "dropped"));
    p->retired_corrupt += json_integer_value(json_object_get(inst->buffer, "corrupt_segments"));
    json_decref(inst->buffer);
    inst->buffer = NULL;
    inst->counter_updates++;
}

void drv_lifecycle_on_message(drv_engine_t *engine, drv_instance_t *inst, void *message)
{
    drv_msg_t *msg = message;
    inst->heard = true;
    switch (msg->type) {
    case DRV_MSG_HELLO:
        s_feed(engine, inst, DRV_LIFE_HELLO, (drv_life_input_t){.pid = (pid_t)msg->pid});
        break;
    case DRV_MSG_READY:
        s_feed(engine, inst, DRV_LIFE_READY, (drv_life_input_t){0});
        break;
    case DRV_MSG_HEARTBEAT:
        inst->last_heartbeat_at = drv_time_wall_ms();
        s_counters(engine, inst, msg);
        s_feed(engine, inst, DRV_LIFE_HEARTBEAT, (drv_life_input_t){0});
        break;
    case DRV_MSG_INIT_FAILED:
        inst->init_failed = true;
        s_feed(engine, inst, DRV_LIFE_INIT_FAILED, (drv_life_input_t){.reason = msg->reason});
        break;
    case DRV_MSG_TAPPED:
        if (engine->tap_listener && json_is_array(msg->nodes)) {
            engine->tap_listener(engine, inst, msg->nodes);
        }
        break;
    case DRV_MSG_DRAINED:
        s_counters(engine, inst, msg);
        drv_registry_touch(engine, inst->pipeline);
        drv_info("instance drained instance=%s records_in=%lld records_out=%lld", inst->id, (long long)msg->records_in,
                 (long long)msg->records_out);
        break;
    default:
        drv_warn("unexpected message from instance=%s type=%s", inst->id, drv_msg_type_name(msg->type));
        break;
    }
}

void drv_lifecycle_on_exit(drv_engine_t *engine, drv_instance_t *inst, int status)
{
    json_int_t kept = json_integer_value(json_object_get(inst->buffer, "records"));
    if (kept > 0) {
        //  Killed at its drain timeout, or crashed: what it had not settled stays in its log.
        drv_warn("instance ended before its disk buffer settled instance=%s records=%lld bytes=%lld: kept on disk; "
                 "a running instance of the pipeline takes it over, else the next start reads it",
                 inst->id, (long long)kept, (long long)json_integer_value(json_object_get(inst->buffer, "bytes")));
        s_event(engine, inst, "buffer.kept",
                json_pack("{s:I, s:I}", "records", kept, "bytes",
                          json_integer_value(json_object_get(inst->buffer, "bytes"))));
    }
    s_retire_counters(inst);
    drv_export_health_update(engine, inst);
    s_feed(engine, inst, DRV_LIFE_EXIT, (drv_life_input_t){.code = drv_spawn_exit_code(status)});
}

void drv_lifecycle_retire(drv_engine_t *engine, drv_instance_t *inst, int64_t drain_timeout_ms)
{
    s_feed(engine, inst, DRV_LIFE_RETIRE, (drv_life_input_t){.drain_ms = drain_timeout_ms});
}

void drv_lifecycle_kill(drv_engine_t *engine, drv_instance_t *inst)
{
    (void)engine;
    if (inst->pid > 0) {
        kill(inst->pid, SIGKILL);
    }
}

static void s_drain(drv_engine_t *engine, drv_instance_t *inst)
{
    if (inst->has_zmq && engine->broker->connected) {
        //  Through the broker, so the DRAIN marker follows the last batch.
        drv_broker_instance(engine, inst, DRV_MSG_INSTANCE_DRAIN);
    } else {
        drv_msg_t msg;
        drv_msg_init(&msg, DRV_MSG_DRAIN);
        drv_msg_send(engine->control, inst->id, &msg, true);
        drv_msg_clear(&msg);
    }
}

static void s_tell(drv_engine_t *engine, drv_instance_t *inst, drv_inst_event_t event, int code)
{
    if (engine->instance_listener) {
        engine->instance_listener(engine, inst, event, code);
    }
}

static void s_apply(drv_engine_t *engine, drv_instance_t *inst, unsigned fx, const drv_life_input_t *in)
{
    if (fx & DRV_LIFE_FX_SPAWN) {
        s_spawn(engine, inst);
    }
    if (fx & DRV_LIFE_FX_SEND_SPEC) {
        s_send_spec(engine, inst);
    }
    if (fx & DRV_LIFE_FX_ROUTE) {
        inst->last_heartbeat_at = drv_time_wall_ms();
        //  spawned_at_us (monotonic) lets bench/startup.py line this up with
        //  the worker's own debug-level startup timestamps.
        drv_info("instance ready instance=%s pid=%d startup_us=%lld spawned_at_us=%lld", inst->id, inst->pid,
                 (long long)(drv_time_mono_us() - inst->spawned_mono_us), (long long)inst->spawned_mono_us);
        if (inst->has_zmq) {
            drv_broker_instance(engine, inst, DRV_MSG_INSTANCE_ADD);
        }
        if (inst->pipeline->tap_nodes) {
            drv_lifecycle_tell_taps(engine, inst);
        }
    }
    if (fx & DRV_LIFE_FX_DRAIN) {
        s_drain(engine, inst);
    }
    if ((fx & DRV_LIFE_FX_TERM) && inst->pid > 0) {
        kill(inst->pid, SIGTERM);
    }
    if ((fx & DRV_LIFE_FX_KILL) && inst->pid > 0) {
        kill(inst->pid, SIGKILL);
    }
    if ((fx & DRV_LIFE_FX_UNROUTE) && inst->has_zmq) {
        drv_broker_instance(engine, inst, DRV_MSG_INSTANCE_DEL);
    }
    if (fx & DRV_LIFE_FX_TELL_READY) {
        s_event(engine, inst, "instance.ready",
                json_pack("{s:I}", "startup_us", (json_int_t)(drv_time_mono_us() - inst->spawned_mono_us)));
        s_tell(engine, inst, DRV_INST_EV_READY, 0);
    }
    if (fx & DRV_LIFE_FX_TELL_EXIT) {
        int code = in->code;
        bool expected = inst->state == DRV_INST_EXITED && !inst->crashed;
        s_event(engine, inst, "instance.exited",
                json_pack("{s:o, s:o, s:b, s:i}", "exit_code", code < 128 ? json_integer(code) : json_null(), "signal",
                          code > 128 ? json_integer(code - 128) : json_null(), "expected", expected, "pid",
                          (int)in->pid_before)); // the process that ended, not the slot's next
        s_tell(engine, inst, DRV_INST_EV_EXITED, code);
    }
    if (fx & DRV_LIFE_FX_DEGRADED) {
        drv_pipeline_t *p = inst->pipeline;
        engine->any_degraded = true;
        int recent = drv_inst_table_recent(inst, in->now_ms);
        drv_warn("pipeline degraded pipeline=%s instance=%s restarts=%d window_secs=%lld", p->key, inst->id, recent,
                 (long long)drv_spec_policy(inst->spec, "restart", "window_secs"));
        drv_events_publish(engine, "pipeline.degraded", p->group, p->name,
                           json_pack("{s:s, s:i}", "instance", inst->id, "restarts", recent));
    }
    if (fx & DRV_LIFE_FX_REMOVE) {
        drv_registry_remove_instance(engine, inst); // inst is freed
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
    int64_t next;  // ms until the earliest deadline, -1 none
    bool degraded; // some pipeline is still degraded
} tick_t;

//  A degraded pipeline recovers once no slot is over its restart budget.
static void s_recover(drv_engine_t *engine, drv_pipeline_t *p, void *arg)
{
    tick_t *tick = arg;
    if (!p->degraded) {
        return;
    }
    bool over = false;
    int64_t window_ms = drv_spec_policy(p->spec, "restart", "window_secs") * 1000;
    for (drv_instance_t *inst = zlistx_first(p->instances); inst; inst = zlistx_next(p->instances)) {
        over |= drv_inst_table_recent(inst, tick->now) > drv_spec_policy(p->spec, "restart", "max_restarts");
        if (inst->recent_count > 0) {
            tick->next =
                s_earliest(tick->next, inst->recent_restarts[inst->recent_count - 1] + window_ms + 1, tick->now);
        }
    }
    if (!over) {
        p->degraded = false;
        drv_registry_touch(engine, p);
        drv_info("pipeline recovered pipeline=%s", p->key);
        drv_events_publish(engine, "pipeline.recovered", p->group, p->name, NULL);
    } else {
        tick->degraded = true;
    }
}

//  The deadlines due now, from the timer heap: O(due × log N), nothing per
//  instance that is not due.
int64_t drv_lifecycle_tick(drv_engine_t *engine)
{
    tick_t tick = {drv_time_mono_ms(), -1, false};
    drv_timer_t *timer;
    while ((timer = drv_timers_pop(engine->timers, tick.now))) {
        drv_instance_t *inst = (drv_instance_t *)((char *)timer - offsetof(drv_instance_t, timer));
        int64_t at;
        drv_life_event_t event = drv_inst_table_deadline(inst, engine->config->heartbeat_interval_ms, &at);
        if (at <= 0 || (event == DRV_LIFE_RESTART_DUE && engine->shutting_down)) {
            continue; // nothing due in this state any more (or nothing restarts now)
        }
        if (at > tick.now) {
            drv_timers_set(engine->timers, &inst->timer, at); // fired early (lazy): the real deadline
            continue;
        }
        s_feed(engine, inst, event, (drv_life_input_t){0}); // arms the next state's deadline itself
    }
    if (engine->any_degraded) {
        drv_registry_each_pipeline(engine, s_recover, &tick);
        engine->any_degraded = tick.degraded;
    }
    int64_t due = drv_timers_next(engine->timers);
    return s_earliest(tick.next, due, tick.now);
}
