/*  drv_inst_table — the life of one instance as a state table, s6-style:
    actions[state][event]. An action changes only the instance's record (and
    its pipeline's degraded mark) and returns the effects to apply: spawn,
    send the spec, route, drain, signal, remove... drv_lifecycle.c feeds the
    events in and applies the effects; tests/unit/test_inst_table.c runs the
    table with no process at all.

                 spawned        READY           retire          exit
      STARTING ───────> STARTING ─────> READY ─────────> DRAINING ─────> EXITED (removed)
          │ retire: SIGTERM                │ heartbeat missed: SIGKILL    │ drain deadline: SIGTERM
          v                                │                              v
      STOPPING ── kill deadline: SIGKILL   │                          STOPPING ──exit──> EXITED
          │ exit                           │ exit (a crash)
          v                                v
       EXITED                   FAILED ── restart due: spawn ──> STARTING
                                  (gated: no restart; the rollout decides)
*/
#ifndef DRV_INST_TABLE_H
#define DRV_INST_TABLE_H

#include "drv_engine.h"

typedef enum {
    DRV_LIFE_SPAWNED = 0,  // a process was started (in.pid)
    DRV_LIFE_SPAWN_FAILED, // none could be (in.reason)
    DRV_LIFE_HELLO,        // it said HELLO (in.pid)
    DRV_LIFE_READY,        // it said READY
    DRV_LIFE_HEARTBEAT,    // it sent a heartbeat
    DRV_LIFE_INIT_FAILED,  // it cannot start (in.reason)
    DRV_LIFE_RETIRE,       // stop it on purpose: drain if it may have traffic (in.drain_ms)
    DRV_LIFE_EXIT,         // its process ended (in.code: exit code or 128+signal)
    DRV_LIFE_HEARTBEAT_MISSED,
    DRV_LIFE_DRAIN_DEADLINE, // drain_ms passed since retire
    DRV_LIFE_KILL_DEADLINE,  // DRV_KILL_GRACE_MS passed since SIGTERM
    DRV_LIFE_RESTART_DUE,    // its restart backoff is over
    DRV_LIFE_EVENTS
} drv_life_event_t;

//  Effects, applied in this order by drv_lifecycle.c.
enum {
    DRV_LIFE_FX_SPAWN = 1 << 0,      // start a process (then feed SPAWNED or SPAWN_FAILED)
    DRV_LIFE_FX_SEND_SPEC = 1 << 1,  // send it its spec
    DRV_LIFE_FX_ROUTE = 1 << 2,      // the broker may route to it (INSTANCE_ADD)
    DRV_LIFE_FX_DRAIN = 1 << 3,      // DRAIN after its last batch (through the broker when it routes)
    DRV_LIFE_FX_TERM = 1 << 4,       // SIGTERM
    DRV_LIFE_FX_KILL = 1 << 5,       // SIGKILL
    DRV_LIFE_FX_UNROUTE = 1 << 6,    // the broker forgets it (INSTANCE_DEL)
    DRV_LIFE_FX_TELL_READY = 1 << 7, // instance.ready, and the operations' listener
    DRV_LIFE_FX_TELL_EXIT = 1 << 8,  // instance.exited, and the operations' listener
    DRV_LIFE_FX_DEGRADED = 1 << 9,   // its pipeline just became degraded
    DRV_LIFE_FX_REMOVE = 1 << 10,    // remove the slot (last: the record is freed)
};

typedef struct {
    int64_t now_ms;       // mono
    pid_t pid;            // SPAWNED, HELLO
    int code;             // EXIT
    int64_t drain_ms;     // RETIRE
    const char *reason;   // SPAWN_FAILED, INIT_FAILED
    bool engine_stopping; // EXIT: droverd is stopping, nothing restarts
    pid_t pid_before;     // the process before the step (what an exit event names)
} drv_life_input_t;

//  Runs the action of (inst->state, event); returns the effects to apply.
unsigned drv_inst_table_step(drv_instance_t *inst, drv_life_event_t event, const drv_life_input_t *in);

//  The deadline event due in inst's state, and when (mono ms; 0: none).
//  heartbeat_ms is the heartbeat interval (READY misses three).
drv_life_event_t drv_inst_table_deadline(const drv_instance_t *inst, int64_t heartbeat_ms, int64_t *at_ms);

//  Restarts of inst's slot within its restart window at now_ms.
int drv_inst_table_recent(const drv_instance_t *inst, int64_t now_ms);

const char *drv_life_event_name(drv_life_event_t event);

#endif
