/*  drv_engine — the records of the supervisor's live state: the engine,
    groups -> pipelines -> instances, changed while the engine runs, only
    ever from the one loop thread. Each module's functions are in its own
    header (core/drv_registry.h, instances/drv_lifecycle.h, ...); this one
    holds only the records every layer reads. */
#ifndef DRV_ENGINE_H
#define DRV_ENGINE_H

#include "drover/drv_config.h"
#include "drover/drv_cpus.h"
#include "drover/drv_histo.h"

#include "drover/drv_timers.h"

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define DRV_ID_MAX 200
#define DRV_MAX_CORES 256
#define DRV_KILL_GRACE_MS 5000      // after SIGTERM, how long before SIGKILL
#define DRV_TAP_SAMPLES_PER_SEC 100 // what an instance samples per tapped node (each tap lets ~100/s through)

//  An instance's state: the rows of its state table (instances/drv_inst_table.h).
typedef enum {
    DRV_INST_STARTING = 0, // spawned, not yet READY
    DRV_INST_READY,        // READY and heartbeating; routable
    DRV_INST_DRAINING,     // asked to drain; finishing what it has
    DRV_INST_EXITED,       // gone on purpose (its slot is being removed)
    DRV_INST_FAILED,       // crashed; waiting out its restart backoff (or, gated, for its rollout)
    DRV_INST_STOPPING,     // stopped on purpose without a drain (SIGTERM sent); shown as "draining"
    DRV_INST_STATES
} drv_inst_state_t;

typedef struct drv_pipeline_t drv_pipeline_t;
typedef struct drv_engine_t drv_engine_t;

//  A PipelineStatus condition, Kubernetes style.
typedef struct {
    bool status;
    char reason[48];   // machine-readable: CamelCase, but exporter_failing as docs/operations.md names it
    char message[640]; // for humans
    int64_t since;     // wall ms of the last change of status
} drv_condition_t;

typedef struct drv_rollout_t drv_rollout_t;

struct drv_instance_t {
    drv_pipeline_t *pipeline;
    json_t *spec; // the spec of its generation (two overlap during a replace)
    bool gated;   // started by a rollout, not ready yet: an exit fails the step
    bool has_zmq; // its spec has receiver:zmq nodes: the broker routes to it
    int core;
    int64_t generation;
    char id[DRV_ID_MAX]; // {group}/{pipeline}@{generation}#{core}
    pid_t pid;           // 0 while not running
    drv_inst_state_t state;
    drv_timer_t timer;           // armed at its state's deadline (drv_lifecycle; may fire early: heartbeats are lazy)
    drv_timers_t *timers;        // the heap it is armed in (engine->timers)
    int64_t deadline_ms;         // mono, the state's deadline (0: none): DRAINING: SIGTERM;
                                 // STOPPING: SIGKILL; FAILED: restart (0: gated, no restart)
    int restarts;                // restarts of this slot since it was created
    int64_t recent_restarts[64]; // mono ms of restarts, newest last (ring)
    int recent_count;
    int64_t started_at;                      // wall ms of the current process
    int64_t spawned_mono_us;                 // mono µs of the current spawn (just before fork)
    int64_t ready_mono_ms;                   // mono ms it said READY
    int64_t last_heartbeat_at;               // wall ms
    int64_t last_heartbeat_mono;             // mono ms
    int64_t records_in, records_out, errors; // from its last heartbeat
    //  What its last process counted, moved into the pipeline's totals when it
    //  ended; taken out again when the next process goes on from the counts
    //  saved with its disk buffer (it counted them too). Cleared at its
    //  first heartbeat.
    int64_t ended_in, ended_out, ended_errors;
    json_t *nodes;            // its per-node counters {"node": [in, out, dropped, errors, ...]}, or NULL
    json_t *buffer;           // its disk buffer's figures from the last heartbeat (schemas/control.md), or NULL
    uint64_t counter_updates; // how many times the counters above were updated
    bool adopted;             // its process was started by the droverd before an upgrade (older binaries)
    bool heard;               // it said something since it was adopted (its control connection is back)
    bool init_failed;         // its current process said INIT_FAILED (its exit follows, with the reason known)
    int last_exit_code;       // exit code or 128+signal of the last process
    bool crashed;             // its last process ended unasked (also while draining: an abort, a fault)
    char detail[256];         // last failure, for status
};

//  Where a pipeline's spec came from (PipelineStatus `source`): the API, the
//  config file (SIGHUP removes what it no longer declares), the OpAMP
//  server's remote config (a new one removes what it no longer declares) or
//  a DroverPipeline resource (its deletion removes it; docs/kubernetes.md).
typedef enum { DRV_SOURCE_API = 0, DRV_SOURCE_CONFIG, DRV_SOURCE_OPAMP, DRV_SOURCE_KUBERNETES } drv_source_t;
#define DRV_SOURCE_NAMES                                                                                               \
    {                                                                                                                  \
        "api", "config", "opamp", "kubernetes"                                                                         \
    }
//  The source named (DRV_SOURCE_NAMES), or fallback.
drv_source_t drv_source_named(const char *name, drv_source_t fallback);
//  A source whose specs the state file keeps, and that the config file does
//  not override at a restart or an upgrade (the remote config, a resource).
bool drv_source_kept(drv_source_t source);

struct drv_pipeline_t {
    char group[64];
    char name[64];
    char key[140]; // "{group}:{pipeline}"
    json_t *spec;  // normalized PipelineSpec of the active generation
    char *spec_hash;
    int64_t generation;       // the active generation (0 before the first create succeeds)
    int64_t next_generation;  // past every generation a rollout ever targeted (a failed one's too): never reused
    json_t *past_rollouts;    // summaries (compact RolloutStatus text, JSON strings) of rollouts before
                              // droverd's last start (state file) and of this run's older ones; with
                              // rollouts, at most DRV_ROLLOUT_HISTORY together (or NULL)
    bool running;             // a generation serves; false before create and after shutdown
    int cores[DRV_MAX_CORES]; // the cores it should run on
    int core_count;
    zlistx_t *rollouts;                     // drv_rollout_t history, oldest first, owned
    drv_rollout_t *active;                  // the rollout under way, or NULL
    zlistx_t *shutdowns;                    // struct drv_shutdown_t history, owned
    struct drv_shutdown_t *shutdown_active; // the shutdown under way (the pipeline is stopping), or NULL
    json_t *previous_spec;                  // the spec before the last replace, for rollback (or NULL)
    drv_source_t source;                    // where its spec came from: the one that stops declaring it removes it
    char owner[320];                        // DRV_SOURCE_KUBERNETES: the resource's "namespace/name"
    bool shut_down;                         // stopped by a shutdown (not by a failed create)
    bool has_zmq;                           // has receiver:zmq nodes: the broker routes to it
    bool degraded;                          // restarted more than max_restarts within window_secs
    int64_t crashes;                        // its instances' crashes, those while draining too (status: crashes)
    bool woken;                             // busy, and an instance event came since its operation last ran
    char frontend_error[300];               // the broker could not bind a receiver endpoint
    bool exporter_failing;                  // an exporter has failed past policies.health.exporter_failing_secs ...
    char exporter_failing_why[600];         // ... which, since when, its last error (instances/drv_export_health.c)
    zlistx_t *instances;                    // drv_instance_t, owned
    zlistx_t *listeners;                    // drv_listener_t, owned (closed when freed)
    int64_t created_at;                     // wall ms
    drv_condition_t cond_ready;             // every desired core has a ready instance
    drv_condition_t cond_progressing;       // a rollout or shutdown is under way
    drv_condition_t cond_degraded;          // crash-looping, or a front door cannot bind
    uint64_t changes;                       // bumped by drv_registry_touch: whatever its status shows changed
    bool dirty;                             // touched since observe/drv_status.c last refreshed its conditions
    char *status_text;                      // its PipelineStatus as JSON text, kept by observe/drv_status.c (owned)
    uint64_t status_changes;                // the changes status_text was made at
    json_t *tap_nodes; // the nodes open taps sample (array of ids; NULL: none), told to its instances
    int64_t retired_in, retired_out, retired_errors;            // counted by processes that ended (a replace,
                                                                // a drain, a crash): the totals never go back
    int64_t retired_replayed, retired_dropped, retired_corrupt; // the same for the disk buffer's counters
    struct drv_rates_t *rates; // its last 5 minutes of rates (observe/drv_rates.c), freed with it
};

typedef struct {
    char name[64];
    zhashx_t *pipelines; // name -> drv_pipeline_t, owned
} drv_group_t;

//  A socket droverd bound for a pipeline's network receiver; every instance
//  of every generation inherits it (instances/drv_listeners.c).
typedef struct {
    char endpoint[300];
    int fd;
} drv_listener_t;

typedef struct drv_instance_t drv_instance_t;
typedef struct drv_upgrade_t drv_upgrade_t;

//  Where droverd's upgrade in place stands (upgrade/drv_upgrade.c); while it
//  is CHECKING or ROLLING no pipeline change starts (operations/drv_admission.c).
typedef enum {
    DRV_UPGRADE_NONE = 0,  // never asked for
    DRV_UPGRADE_CHECKING,  // the new droverd is asked whether it can take over
    DRV_UPGRADE_ROLLING,   // it took over: pipelines and the broker move onto the new binaries
    DRV_UPGRADE_SUCCEEDED, // every process runs the new binaries
    DRV_UPGRADE_FAILED,    // refused, or a pipeline's rollout failed (it runs the old binaries still)
} drv_upgrade_state_t;

//  What happened to an instance, told to the operations that wait on it: the
//  instances layer reports through engine->instance_listener, which the loop
//  points at the operations layer (a lower layer never calls upward).
typedef enum {
    DRV_INST_EV_EXITED = 0, // its process ended; code is its exit code or 128+signal
    DRV_INST_EV_READY,      // it said READY
} drv_inst_event_t;
typedef void(drv_inst_listener_fn)(drv_engine_t *engine, drv_instance_t *inst, drv_inst_event_t event, int code);
//  Every event published (core/drv_events.c), for the streams of the observe layer.
typedef void(drv_event_listener_fn)(drv_engine_t *engine, const char *topic, const json_t *event);
//  Sampled records an instance sent for the taps: [[node, record as JSON text], ...].
typedef void(drv_tap_listener_fn)(drv_engine_t *engine, drv_instance_t *inst, const json_t *samples);

struct drv_engine_t {
    drv_config_t *config;
    drv_inst_listener_fn *instance_listener;  // operations' ear for instance events
    drv_event_listener_fn *event_listener;    // the event streams' (observe/drv_sse.c)
    drv_event_listener_fn *resource_listener; // the resources' (kubernetes/drv_kube_source.c)
    drv_tap_listener_fn *tap_listener;        // the taps' (observe/drv_taps.c)
    struct drv_sse_t *sse;                    // Server-Sent Events clients (observe/drv_sse.c), owned
    struct drv_taps_t *taps;                  // open taps (observe/drv_taps.c), owned
    int64_t sse_dropped;                      // events not queued for a client whose queue was full
    drv_cpus_t cpus;                          // CPUs droverd may use
    drv_spec_env_t spec_env;                  // what specs are judged against: cpus, data_dirs, run_dir
    char *bin_dir;                            // where drover-worker and drover-broker live
    char *control_endpoint;                   // ROUTER the broker and workers connect to
    char *data_endpoint;                      // the broker's backend, for workers
    zsock_t *control;
    int signal_fd;
    zhashx_t *groups;                 // name -> drv_group_t, owned
    zhashx_t *live;                   // instance id -> drv_instance_t (not owned)
    zlistx_t *busy;                   // drv_pipeline_t with an operation under way (not owned)
    zlistx_t *dirty;                  // drv_pipeline_t touched since the last status refresh (not owned)
    struct drv_broker_link_t *broker; // the broker process (instances/drv_broker_link.c), owned
    //  admin plane
    drv_timers_t *timers;                // every instance's deadline, earliest first (drv_lifecycle_tick)
    bool any_degraded;                   // some pipeline is degraded: recovery is checked on each tick
    zsock_t *admin;                      // ROUTER for ops tools (msgpack envelope)
    zsock_t *events;                     // PUB: topic frame + msgpack map
    struct drv_admin_waiters_t *waiters; // requests waiting for an operation's end (admin/drv_admin_waiters.c)
    struct drv_admin_zap_t *zap;         // CURVE authentication, answered on this loop (admin/drv_admin_zap.c)
    struct drv_admin_http_t *http;       // the admin HTTP server, driven from this loop
    char *http_token;                    // bearer token for PUT/POST/DELETE, or NULL
    int64_t started_at;                  // wall ms
    int64_t rollout_counts[4][3];        // [create noop resize replace][succeeded failed rollback_failed]
    drv_histo_t rollout_durations[4];    // [create noop resize replace]: from start to end
    int64_t rates_due_ms;                // mono: the next sample of every pipeline's rates (observe/drv_rates.c)
    int64_t config_reloads[2];           // reloads of the config file (SIGHUP, watch_config): [applied refused]
    int64_t next_rollout_id;
    int64_t next_shutdown_id;
    bool state_dirty;    // the applied state changed: write the state file
    json_t *opamp_saved; // the OpAMP agent's part of the state file ({remote_config_hash, status, error}), or NULL
    struct drv_state_saver_t *state; // saving it, with retries (operations/drv_state.c), owned
    struct drv_opamp_t *opamp;       // the OpAMP agent (opamp/drv_opamp.c), owned; NULL without engine.opamp
    //  engine.telemetry's agent (telemetry/drv_telemetry.c) counts here, for /metrics:
    //  requests taken (metrics, logs), requests not taken, log lines dropped from its full queue.
    int64_t telemetry_sent[2], telemetry_failures, telemetry_dropped_logs;
    struct drv_kube_source_t
        *kube_source; // DroverPipelines watched (kubernetes/), owned; NULL without engine.kubernetes
    //  shutdown
    bool shutting_down;
    int64_t shutdown_deadline_ms;
    bool done;                        // the loop should end
    struct drv_zygote_link_t *zygote; // the worker zygote (instances/drv_zygote_link.c), owned
    struct drv_notify_t *notify;      // service manager notification (observe/drv_notify.c), owned
    struct drv_probe_runs_t *probes;  // instantiate dry runs under way (instances/drv_probe_run.c), owned
    //  upgrading droverd in place (upgrade/drv_upgrade.c)
    char *exe_path;                    // droverd's executable as started: what an upgrade executes again
    char **argv;                       // droverd's command line, for the same
    int http_listen_fd;                // the admin HTTP server's listening socket (-1: none), kept across one
    json_t *handoff;                   // what the droverd before this one handed over, until adopted (or NULL)
    struct drv_upgrade_t *upgrade;     // the upgrade under way or last done (upgrade/drv_upgrade.c), owned
    drv_upgrade_state_t upgrade_state; // its state (the record's other fields are the upgrade layer's)
};

#endif
