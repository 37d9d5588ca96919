/*  drv_inst_table — see drv_inst_table.h. Each action is small and reads
    top to bottom; the table at the end says which runs when. An event that
    means nothing in a state is ignored (s_ignore).

    A crash (an exit nobody asked for) is restarted on the same core and
    generation after an exponential backoff; more than max_restarts within
    window_secs marks the pipeline degraded (and restarts go on, at the
    longest backoff, like a Kubernetes CrashLoopBackOff). */
#include "drv_inst_table.h"
#include "drv_registry.h"

#include "drover/drv_log.h"
#include "drover/drv_spec.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define MISSED_HEARTBEATS 3

typedef unsigned(action_fn)(drv_instance_t *inst, const drv_life_input_t *in);

static int64_t s_policy(const drv_instance_t *inst, const char *key)
{
    return drv_spec_policy(inst->spec, "restart", key);
}

int drv_inst_table_recent(const drv_instance_t *inst, int64_t now_ms)
{
    int64_t window_ms = s_policy(inst, "window_secs") * 1000;
    int count = 0;
    for (int i = 0; i < inst->recent_count; i++) {
        count += now_ms - inst->recent_restarts[i] <= window_ms;
    }
    return count;
}

static unsigned s_ignore(drv_instance_t *inst, const drv_life_input_t *in)
{
    (void)inst;
    (void)in;
    return 0;
}

//  FAILED, with a restart after the backoff its recent restarts call for.
static unsigned s_schedule_restart(drv_instance_t *inst, const drv_life_input_t *in)
{
    int64_t now = in->now_ms;
    int capacity = (int)(sizeof inst->recent_restarts / sizeof inst->recent_restarts[0]);
    if (inst->recent_count == capacity) {
        memmove(inst->recent_restarts, inst->recent_restarts + 1, (capacity - 1) * sizeof inst->recent_restarts[0]);
        inst->recent_count--;
    }
    inst->recent_restarts[inst->recent_count++] = now;
    inst->restarts++;
    int recent = drv_inst_table_recent(inst, now);
    //  A one-off crash restarts at once (as s6 does); a second one within the
    //  window waits initial_backoff_ms, and each further one twice as long.
    int64_t backoff = recent <= 1 ? 0 : s_policy(inst, "initial_backoff_ms");
    int64_t maximum = s_policy(inst, "max_backoff_ms");
    for (int i = 2; i < recent && backoff < maximum; i++) {
        backoff *= 2;
    }
    backoff = backoff > maximum ? maximum : backoff;
    inst->state = DRV_INST_FAILED;
    inst->deadline_ms = now + backoff;
    drv_info("instance restart scheduled instance=%s in_ms=%lld restarts=%d", inst->id, (long long)backoff,
             inst->restarts);
    if (recent > s_policy(inst, "max_restarts") && !inst->pipeline->degraded) {
        inst->pipeline->degraded = true;
        return DRV_LIFE_FX_DEGRADED;
    }
    return 0;
}

static unsigned s_spawned(drv_instance_t *inst, const drv_life_input_t *in)
{
    inst->pid = in->pid;
    inst->state = DRV_INST_STARTING;
    inst->deadline_ms = 0;
    inst->crashed = false;
    drv_info("instance started instance=%s pid=%d core=%d", inst->id, inst->pid, inst->core);
    return 0;
}

static unsigned s_spawn_failed(drv_instance_t *inst, const drv_life_input_t *in)
{
    drv_error("instance spawn failed instance=%s reason=\"%s\"", inst->id, in->reason);
    snprintf(inst->detail, sizeof inst->detail, "spawn failed: %s", in->reason);
    return s_schedule_restart(inst, in);
}

static unsigned s_hello(drv_instance_t *inst, const drv_life_input_t *in)
{
    if (in->pid != inst->pid) {
        drv_warn("hello from unexpected pid instance=%s pid=%d expected=%d", inst->id, in->pid, inst->pid);
        return 0;
    }
    return DRV_LIFE_FX_SEND_SPEC;
}

static unsigned s_ready(drv_instance_t *inst, const drv_life_input_t *in)
{
    inst->state = DRV_INST_READY;
    inst->gated = false;
    inst->ready_mono_ms = inst->last_heartbeat_mono = in->now_ms;
    inst->detail[0] = 0;
    return DRV_LIFE_FX_ROUTE | DRV_LIFE_FX_TELL_READY;
}

static unsigned s_heartbeat(drv_instance_t *inst, const drv_life_input_t *in)
{
    inst->last_heartbeat_mono = in->now_ms;
    return 0;
}

static unsigned s_init_failed(drv_instance_t *inst, const drv_life_input_t *in)
{
    snprintf(inst->detail, sizeof inst->detail, "%s", in->reason);
    drv_error("instance cannot start instance=%s reason=\"%s\"", inst->id, in->reason);
    return 0;
}

static unsigned s_heartbeat_missed(drv_instance_t *inst, const drv_life_input_t *in)
{
    drv_warn("instance unhealthy: %d heartbeats missed instance=%s pid=%d", MISSED_HEARTBEATS, inst->id, inst->pid);
    snprintf(inst->detail, sizeof inst->detail, "unhealthy: %d heartbeats missed", MISSED_HEARTBEATS);
    inst->last_heartbeat_mono = in->now_ms; // one kill is enough; the exit follows
    return DRV_LIFE_FX_KILL;
}

//  Nothing was routed to it yet: SIGTERM now, SIGKILL after the grace.
static unsigned s_stop(drv_instance_t *inst, const drv_life_input_t *in)
{
    inst->state = DRV_INST_STOPPING;
    inst->deadline_ms = in->now_ms + DRV_KILL_GRACE_MS;
    return DRV_LIFE_FX_TERM;
}

static unsigned s_drain(drv_instance_t *inst, const drv_life_input_t *in)
{
    inst->state = DRV_INST_DRAINING;
    inst->deadline_ms = in->now_ms + in->drain_ms;
    drv_info("instance draining instance=%s timeout_ms=%lld", inst->id, (long long)in->drain_ms);
    return DRV_LIFE_FX_DRAIN;
}

static unsigned s_drain_timed_out(drv_instance_t *inst, const drv_life_input_t *in)
{
    drv_warn("drain timed out, sending SIGTERM instance=%s pid=%d", inst->id, inst->pid);
    return s_stop(inst, in);
}

static unsigned s_kill(drv_instance_t *inst, const drv_life_input_t *in)
{
    (void)in;
    drv_warn("still running after SIGTERM, sending SIGKILL instance=%s pid=%d", inst->id, inst->pid);
    inst->deadline_ms = 0;
    return DRV_LIFE_FX_KILL;
}

//  Not running (waiting to restart, or failed for good): gone at once.
static unsigned s_drop(drv_instance_t *inst, const drv_life_input_t *in)
{
    (void)in;
    inst->state = DRV_INST_EXITED;
    inst->deadline_ms = 0;
    return DRV_LIFE_FX_REMOVE;
}

static unsigned s_exited(drv_instance_t *inst, const drv_life_input_t *in)
{
    inst->last_exit_code = in->code;
    inst->pid = 0;
    inst->deadline_ms = 0;
    return DRV_LIFE_FX_UNROUTE | DRV_LIFE_FX_TELL_EXIT;
}

//  It exited on purpose (retired, or droverd is stopping): gone.
static unsigned s_gone(drv_instance_t *inst, const drv_life_input_t *in)
{
    unsigned fx = s_exited(inst, in);
    inst->state = DRV_INST_EXITED;
    drv_info("instance exited instance=%s exit=%d", inst->id, in->code);
    return fx | DRV_LIFE_FX_REMOVE;
}

//  The crash said: its detail (what ended it), the log at WARN, counted.
static void s_say_crash(drv_instance_t *inst, const drv_life_input_t *in, drv_inst_state_t was)
{
    if (inst->detail[0] == 0 || was != DRV_INST_STARTING) {
        if (in->code > 128) {
            snprintf(inst->detail, sizeof inst->detail, "killed by signal %d%s", in->code - 128,
                     was == DRV_INST_DRAINING || was == DRV_INST_STOPPING ? " while draining" : "");
        } else {
            snprintf(inst->detail, sizeof inst->detail, "exited with code %d", in->code);
        }
    }
    inst->crashed = true;
    inst->pipeline->crashes++;
    drv_warn("instance crashed instance=%s exit=%d state=%s detail=\"%s\"", inst->id, in->code,
             drv_inst_state_name(was), inst->detail);
}

//  It exited while draining or stopping: gone, as asked, unless a signal
//  droverd did not send ended it (it sends none while an instance drains,
//  SIGTERM then SIGKILL when it stops one): an abort (a library's
//  assertion), a fault, the OOM killer. That is a crash: counted in the
//  slot's restarts and the pipeline's crashes, the event not expected.
static unsigned s_retired_exit(drv_instance_t *inst, const drv_life_input_t *in)
{
    int sig = in->code > 128 ? in->code - 128 : 0;
    bool unasked = sig && (inst->state == DRV_INST_DRAINING || (sig != SIGTERM && sig != SIGKILL));
    if (!unasked || in->engine_stopping) {
        return s_gone(inst, in);
    }
    drv_inst_state_t was = inst->state;
    unsigned fx = s_exited(inst, in);
    inst->state = DRV_INST_EXITED;
    inst->restarts++; // nothing restarts a slot that was retiring, but the crash shows where restarts do
    s_say_crash(inst, in, was);
    return fx | DRV_LIFE_FX_REMOVE;
}

//  It exited while starting or ready, unasked: a crash.
static unsigned s_crashed(drv_instance_t *inst, const drv_life_input_t *in)
{
    if (in->engine_stopping) {
        return s_gone(inst, in);
    }
    drv_inst_state_t was = inst->state;
    unsigned fx = s_exited(inst, in);
    s_say_crash(inst, in, was);
    if (inst->gated) {
        //  A rollout is waiting for this one: its exit fails the step; the
        //  rollout decides what happens next, not the restart policy.
        inst->state = DRV_INST_FAILED;
        inst->deadline_ms = 0;
        return fx;
    }
    return fx | s_schedule_restart(inst, in);
}

static unsigned s_restart(drv_instance_t *inst, const drv_life_input_t *in)
{
    (void)in;
    inst->deadline_ms = 0;
    return DRV_LIFE_FX_SPAWN;
}

#define E(name) [DRV_LIFE_##name] =
static action_fn *const s_actions[DRV_INST_STATES][DRV_LIFE_EVENTS] = {
    [DRV_INST_STARTING] = {E(SPAWNED) s_spawned, E(SPAWN_FAILED) s_spawn_failed, E(HELLO) s_hello, E(READY) s_ready,
                           E(HEARTBEAT) s_heartbeat, E(INIT_FAILED) s_init_failed, E(RETIRE) s_stop, E(EXIT) s_crashed},
    [DRV_INST_READY] = {E(HEARTBEAT) s_heartbeat, E(INIT_FAILED) s_init_failed, E(RETIRE) s_drain, E(EXIT) s_crashed,
                        E(HEARTBEAT_MISSED) s_heartbeat_missed},
    [DRV_INST_DRAINING] = {E(HEARTBEAT) s_heartbeat, E(EXIT) s_retired_exit, E(DRAIN_DEADLINE) s_drain_timed_out},
    [DRV_INST_STOPPING] = {E(HEARTBEAT) s_heartbeat, E(EXIT) s_retired_exit, E(KILL_DEADLINE) s_kill},
    [DRV_INST_FAILED] = {E(SPAWNED) s_spawned, E(SPAWN_FAILED) s_spawn_failed, E(RETIRE) s_drop,
                         E(RESTART_DUE) s_restart},
    [DRV_INST_EXITED] = {0},
};
#undef E

unsigned drv_inst_table_step(drv_instance_t *inst, drv_life_event_t event, const drv_life_input_t *in)
{
    if ((unsigned)inst->state >= DRV_INST_STATES || (unsigned)event >= DRV_LIFE_EVENTS) {
        return 0;
    }
    action_fn *action = s_actions[inst->state][event];
    return (action ? action : s_ignore)(inst, in);
}

drv_life_event_t drv_inst_table_deadline(const drv_instance_t *inst, int64_t heartbeat_ms, int64_t *at_ms)
{
    *at_ms = 0;
    switch (inst->state) {
    case DRV_INST_READY:
        *at_ms = inst->last_heartbeat_mono + MISSED_HEARTBEATS * heartbeat_ms + 1;
        return DRV_LIFE_HEARTBEAT_MISSED;
    case DRV_INST_DRAINING:
        *at_ms = inst->deadline_ms;
        return DRV_LIFE_DRAIN_DEADLINE;
    case DRV_INST_STOPPING:
        *at_ms = inst->deadline_ms;
        return DRV_LIFE_KILL_DEADLINE;
    case DRV_INST_FAILED:
        *at_ms = inst->deadline_ms; // 0 when gated: the rollout decides
        return DRV_LIFE_RESTART_DUE;
    default:
        return DRV_LIFE_EVENTS;
    }
}

const char *drv_life_event_name(drv_life_event_t event)
{
    static const char *names[] = {"spawned",          "spawn_failed",   "hello",         "ready",
                                  "heartbeat",        "init_failed",    "retire",        "exit",
                                  "heartbeat_missed", "drain_deadline", "kill_deadline", "restart_due"};
    return (unsigned)event < DRV_LIFE_EVENTS ? names[event] : "?";
}
