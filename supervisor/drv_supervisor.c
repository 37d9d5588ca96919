/*  drv_supervisor — the one loop of droverd.

    Everything happens here, on one thread: control messages from the broker and
    workers, signals through signalfd (SIGCHLD reaps; SIGTERM/SIGINT drain; a
    second one kills; SIGHUP reloads), the admin sockets and HTTP server (no
    thread of their own), and deadlines from a timer heap (engine->timers), so
    an idle engine sleeps instead of ticking and a wake-up costs nothing per
    instance that is not due.

    Shutdown, like nginx's: close every front door (the broker forwards what it
    already accepted), drain every instance, stop the broker last; SIGKILL
    whatever is left at shutdown_timeout_secs. */
#include "drv_supervisor.h"
#include "drv_preflight.h"
#include "drv_admin.h"
#include "drv_engine.h"
#include "drv_reload.h"
#include "drv_restore.h"
#include "drv_rollout.h"
#include "drv_state.h"
#include "drv_operations.h"
#include "drv_signals.h"
#include "drv_config_watch.h"
#include "drv_spawn.h"
#include "drv_registry.h"
#include "drv_lifecycle.h"
#include "drv_probe_run.h"
#include "drv_zygote_link.h"
#include "drv_broker_link.h"
#include "drv_status.h"
#include "drv_notify.h"
#include "drv_events.h"
#include "drv_sse.h"
#include "drv_rates.h"
#include "drv_taps.h"
#include "drv_admin_zmq.h"
#include "drv_admin_zap.h"
#include "drv_admin_waiters.h"
#include "drv_admin_http.h"
#include "drv_opamp.h"
#include "drv_telemetry.h"
#include "drv_kube_source.h"
#include "drv_upgrade.h"
#include "drv_handoff.h"

#include "drover/drv_log.h"
#include "drover/drv_msg.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define FINAL_REAP_MS 3000

static void s_on_control(drv_engine_t *engine);

//  A worker that cannot start says why (INIT_FAILED), then exits: its
//  message can still be on its way through the control socket when the
//  exit is seen. The reason is what the operator needs (RolloutStatus
//  failure_reason), so the control socket is read until it came, for at
//  most a second; it is normally there at once.
static void s_await_reason(drv_engine_t *engine, drv_instance_t *inst, int status)
{
    if (!WIFEXITED(status) || WEXITSTATUS(status) != DRV_EXIT_INIT_FAILED) {
        return;
    }
    int64_t until = drv_time_mono_ms() + 1000;
    while (!inst->init_failed) {
        int64_t left = until - drv_time_mono_ms();
        zmq_pollitem_t item = {zsock_resolve(engine->control), 0, ZMQ_POLLIN, 0};
        if (left <= 0 || zmq_poll(&item, 1, (long)left) <= 0) {
            return;
        }
        s_on_control(engine);
    }
}

static void s_reap(drv_engine_t *engine)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (drv_broker_is(engine, pid)) {
            drv_broker_on_exit(engine, status);
            continue;
        }
        if (drv_zygote_is(engine, pid)) {
            drv_zygote_on_exit(engine, status);
            continue;
        }
        if (drv_probe_runs_on_exit(engine, pid, status) || drv_upgrade_on_exit(engine, pid, status)) {
            continue;
        }
        drv_instance_t *inst = drv_registry_by_pid(engine, pid);
        if (inst) {
            s_await_reason(engine, inst, status);
            drv_lifecycle_on_exit(engine, inst, status);
        } else {
            drv_debug("reaped orphan pid=%d exit=%d", pid, drv_spawn_exit_code(status));
        }
    }
}

static void s_kill_all(drv_engine_t *engine, drv_instance_t *inst, void *arg)
{
    (void)arg;
    drv_lifecycle_kill(engine, inst);
}

static void s_begin_shutdown(drv_engine_t *engine, int sig)
{
    int64_t timeout_ms = (int64_t)engine->config->shutdown_timeout_secs * 1000;
    engine->shutting_down = true;
    engine->shutdown_deadline_ms = drv_time_mono_ms() + timeout_ms;
    drv_zygote_stop(engine);
    drv_notify_stopping(engine->notify);
    drv_events_publish(engine, "engine.stopping", NULL, NULL, json_pack("{s:s}", "signal", strsignal(sig)));
    drv_info("shutdown started signal=%s timeout_secs=%d instances=%zu", strsignal(sig),
             engine->config->shutdown_timeout_secs, drv_registry_instance_count(engine));
    //  Leave room between the drain deadline and the hard one for SIGTERM.
    int64_t drain_ms = timeout_ms > 2 * DRV_KILL_GRACE_MS ? timeout_ms - DRV_KILL_GRACE_MS : timeout_ms / 2;
    drv_operations_stop_all(engine, drain_ms); // a shutdown of every pipeline
}

static void s_kill_everything(drv_engine_t *engine)
{
    drv_registry_each_instance(engine, s_kill_all, NULL);
    drv_broker_kill(engine);
    drv_zygote_kill(engine);
}

static void s_on_signal(drv_engine_t *engine, int sig)
{
    switch (sig) {
    case SIGCHLD:
        s_reap(engine);
        break;
    case SIGTERM:
    case SIGINT:
    case SIGQUIT:
        if (!engine->shutting_down) {
            s_begin_shutdown(engine, sig);
        } else {
            drv_warn("second %s: killing everything now", strsignal(sig));
            s_kill_everything(engine);
            engine->done = true;
        }
        break;
    case SIGUSR2: {
        char why[600];
        if (drv_upgrade_request(engine, "SIGUSR2", why, sizeof why) != 0) {
            drv_warn("SIGUSR2: upgrade refused: %s", why);
        }
        break;
    }
    case SIGHUP:
        if (engine->shutting_down) {
            drv_warn("SIGHUP ignored: shutting down");
        } else {
            drv_notify_reloading(engine->notify, engine);
            drv_reload_apply(engine, "SIGHUP");
        }
        break;
    default:
        break;
    }
}

static void s_on_control(drv_engine_t *engine)
{
    zmsg_t *zmsg = zmsg_recv(engine->control);
    if (!zmsg) {
        return;
    }
    zframe_t *identity = zmsg_first(zmsg);
    zframe_t *body = zmsg_next(zmsg);
    char *who = identity ? zframe_strdup(identity) : NULL;
    drv_msg_t msg;
    char err[200];
    if (!who || !body || zmsg_size(zmsg) != 2) {
        drv_warn("malformed control envelope from=%s", who ? who : "?");
    } else if (drv_msg_decode(&msg, zframe_data(body), zframe_size(body), err, sizeof err) != 0) {
        drv_warn("malformed control message from=%s reason=\"%s\"", who, err);
    } else {
        if (strcmp(who, "broker") == 0) {
            drv_broker_on_message(engine, &msg);
        } else {
            drv_instance_t *inst = zhashx_lookup(engine->live, who);
            if (inst) {
                drv_lifecycle_on_message(engine, inst, &msg);
            } else {
                drv_debug("message from unknown peer=%s type=%s", who, drv_msg_type_name(msg.type));
            }
        }
        drv_msg_clear(&msg);
    }
    free(who);
    zmsg_destroy(&zmsg);
}

//  Reads what the control socket holds now. Called before deadlines are
//  judged: heartbeats that queued while the loop was busy are not missed.
static void s_drain_control(drv_engine_t *engine)
{
    for (int i = 0; i < 10000 && (zsock_events(engine->control) & ZMQ_POLLIN); i++) {
        s_on_control(engine);
    }
}

static int64_t s_min_wait(int64_t a, int64_t b)
{
    if (a < 0) {
        return b;
    }
    if (b < 0) {
        return a;
    }
    return a < b ? a : b;
}

//  After the loop: nothing of ours may outlive droverd, and as PID 1 nothing
//  may be left a zombie.
static void s_final_reap(drv_engine_t *engine)
{
    int64_t deadline = drv_time_mono_ms() + FINAL_REAP_MS;
    while (drv_time_mono_ms() < deadline) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid < 0 && errno == ECHILD) {
            return;
        }
        if (pid > 0) {
            if (drv_broker_is(engine, pid)) {
                engine->broker->pid = 0;
            }
            continue;
        }
        struct timespec pause = {0, 5 * 1000 * 1000};
        nanosleep(&pause, NULL); // children are dying; wait for the kernel, not for an event
    }
    s_kill_everything(engine);
}

int drv_supervisor_run(drv_config_t *config, const drv_cpus_t *cpus, const char *bin_dir, const char *exe, char **argv,
                       int signal_fd, json_t *handoff)
{
    drv_engine_t engine = {.config = config, .signal_fd = signal_fd, .argv = argv, .handoff = handoff};
    drv_telemetry_t *telemetry = NULL;
    engine.cpus = *cpus;
    engine.spec_env = drv_config_spec_env(config, &engine.cpus);
    engine.exe_path = strdup(exe);
    engine.bin_dir = strdup(bin_dir);
    engine.http_listen_fd = handoff ? drv_handoff_http_fd(handoff) : -1;
    engine.upgrade = drv_upgrade_new();
    engine.instance_listener = drv_operations_on_instance;
    engine.timers = drv_timers_new();
    drv_sse_init(&engine);
    drv_sse_continue_at(&engine, json_integer_value(json_object_get(handoff, "next_event_id")));
    drv_taps_init(&engine);
    drv_registry_group(&engine, "default", true); // the default group always exists
    int rc = DRV_EXIT_OK;
    char why[1200];
    if (drv_preflight_private_dir("run_dir", config->run_dir, true, why, sizeof why) != 0 ||
        (config->buffer_dir &&
         drv_preflight_private_dir("engine.buffer_dir", config->buffer_dir, false, why, sizeof why) != 0)) {
        fprintf(stderr, "droverd: %s\n", why);
        rc = DRV_EXIT_SYSTEM;
        goto done;
    }
    //  Orphans of our children come to us even when we are not PID 1.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (asprintf(&engine.control_endpoint, "ipc://%s/control.sock", config->run_dir) < 0 ||
        asprintf(&engine.data_endpoint, "ipc://%s/data.sock", config->run_dir) < 0) {
        rc = DRV_EXIT_SYSTEM;
        goto done;
    }
    engine.control = zsock_new(ZMQ_ROUTER);
    zsock_set_router_handover(engine.control, 1); // a restarted worker takes over its id
    zsock_set_router_mandatory(engine.control, 1);
    zsock_set_linger(engine.control, 0);
    if (zsock_bind(engine.control, "%s", engine.control_endpoint) < 0) {
        fprintf(stderr, "droverd: cannot bind %s: %s\n", engine.control_endpoint, zmq_strerror(zmq_errno()));
        rc = DRV_EXIT_SYSTEM;
        goto done;
    }
    chmod(engine.control_endpoint + strlen("ipc://"), 0600);
    if (config->http_token_file &&
        drv_preflight_token(config->http_token_file, &engine.http_token, why, sizeof why) != 0) {
        fprintf(stderr, "droverd: %s\n", why);
        rc = DRV_EXIT_CONFIG;
        goto done;
    }
    char err[600];
    if (drv_admin_zmq_start(&engine, err, sizeof err) != 0 || drv_admin_http_start(&engine, err, sizeof err) != 0) {
        fprintf(stderr, "droverd: %s\n", err);
        rc = strstr(err, "engine.admin") ? DRV_EXIT_CONFIG : DRV_EXIT_SYSTEM;
        goto done;
    }
    engine.started_at = drv_time_wall_ms();
    for (int a = 0; a < 4; a++) {
        engine.rollout_durations[a].long_bounds = true; // a rollout takes seconds to hours
    }
    engine.opamp = drv_opamp_new(&engine, err, sizeof err);
    if (!engine.opamp && err[0]) {
        fprintf(stderr, "droverd: %s\n", err);
        rc = DRV_EXIT_CONFIG;
        goto done;
    }
    telemetry = drv_telemetry_new(&engine, err, sizeof err);
    if (!telemetry && err[0]) {
        fprintf(stderr, "droverd: %s\n", err);
        rc = DRV_EXIT_CONFIG;
        goto done;
    }
    drv_kube_source_t *resources = drv_kube_source_new(&engine, err, sizeof err);
    if (!resources && err[0]) {
        fprintf(stderr, "droverd: %s\n", err);
        rc = DRV_EXIT_CONFIG;
        goto done;
    }
    drv_info("started pid=%d config=%s cpus=%d run_dir=%s", getpid(), config->path, cpus->count, config->run_dir);
    if (!config->data_dirs) {
        drv_warn("engine.data_dirs is not set: exporter:file paths and ipc:// endpoints of pipelines may be "
                 "anywhere droverd's user can write (docs/security.md)");
    }
    engine.notify = drv_notify_new();
    engine.state = drv_state_saver_new();
    engine.broker = drv_broker_link_new();
    engine.zygote = drv_zygote_link_new();
    drv_zygote_start(&engine);
    if (engine.handoff) {
        drv_upgrade_resume(&engine); // adopts the broker, the pipelines and their instances
    } else {
        drv_broker_start(&engine);
        drv_restore_start_pipelines(&engine);
    }
    drv_config_watch_t *watch = config->watch_config ? drv_config_watch_new(&engine) : NULL;
    drv_events_publish(&engine, "config.loaded", NULL, NULL, json_pack("{s:s}", "path", config->path));

    bool was_busy = false;
    while (!engine.done) {
        s_drain_control(&engine);
        bool busy = engine.busy && zlistx_size(engine.busy) > 0;
        if (was_busy && !busy) {
            malloc_trim(0); // a burst of rollouts is over: what it freed goes back to the system (B8)
        }
        was_busy = busy;
        int64_t wait = s_min_wait(drv_lifecycle_tick(&engine), drv_broker_tick(&engine));
        wait = s_min_wait(wait, drv_operations_tick(&engine));
        wait = s_min_wait(wait, drv_admin_waiters_tick(&engine));
        wait = s_min_wait(wait, drv_upgrade_tick(&engine));
        if (engine.shutting_down) {
            int64_t now = drv_time_mono_ms();
            if (now >= engine.shutdown_deadline_ms) {
                drv_warn("shutdown deadline passed: killing what is left instances=%zu",
                         drv_registry_instance_count(&engine));
                s_kill_everything(&engine);
                break;
            }
            if (drv_registry_instance_count(&engine) == 0) {
                drv_broker_stop(&engine); // last: every instance has drained through it
            }
            if (drv_broker_stopped(&engine)) {
                drv_info("shutdown complete");
                break;
            }
            wait = s_min_wait(wait, engine.shutdown_deadline_ms - now);
        }
        drv_status_refresh(&engine);
        wait = s_min_wait(wait, drv_notify_tick(engine.notify, &engine));
        wait = s_min_wait(wait, drv_state_tick(&engine));
        wait = s_min_wait(wait, drv_sse_tick(&engine));
        wait = s_min_wait(wait, drv_rates_tick(&engine));
        wait = s_min_wait(wait, drv_taps_tick(&engine));
        if (watch) {
            wait = s_min_wait(wait, drv_config_watch_tick(&engine, watch));
        }
        wait = s_min_wait(wait, drv_probe_runs_tick(&engine));
        wait = s_min_wait(wait, drv_opamp_tick(engine.opamp));
        wait = s_min_wait(wait, drv_telemetry_tick(telemetry));
        if (!engine.shutting_down) {
            wait = s_min_wait(wait, drv_kube_source_tick(resources)); // restored first: it converges from there
        }
        int64_t http_wait = drv_admin_http_timeout_ms(&engine);
        wait = s_min_wait(wait, http_wait);
        int64_t http_due = http_wait >= 0 ? drv_time_mono_ms() + http_wait : -1;
        zsock_t *zap = drv_admin_zap_socket(engine.zap);
        zmq_pollitem_t items[10 + DRV_PROBE_MAX] = {{zsock_resolve(engine.control), 0, ZMQ_POLLIN, 0},
                                                    {NULL, signal_fd, ZMQ_POLLIN, 0},
                                                    {zsock_resolve(engine.admin), 0, ZMQ_POLLIN, 0},
                                                    {NULL, watch ? drv_config_watch_fd(watch) : -1, ZMQ_POLLIN, 0},
                                                    {NULL, drv_admin_http_fd(&engine), ZMQ_POLLIN, 0},
                                                    {zap ? zsock_resolve(zap) : NULL, -1, ZMQ_POLLIN, 0},
                                                    {NULL, drv_opamp_fd(engine.opamp), ZMQ_POLLIN, 0},
                                                    {NULL, drv_upgrade_fd(&engine), ZMQ_POLLIN, 0},
                                                    {NULL, drv_kube_source_fd(resources), ZMQ_POLLIN, 0},
                                                    {NULL, drv_telemetry_fd(telemetry), ZMQ_POLLIN, 0}};
        int probes = drv_probe_runs_poll_items(&engine, items + 10);
        int ready = zmq_poll(items, 10 + probes, wait < 0 ? -1 : (long)wait);
        if (ready < 0 && zmq_errno() != EINTR) {
            drv_error("poll failed: %s", zmq_strerror(zmq_errno()));
            rc = DRV_EXIT_SYSTEM;
            break;
        }
        if (ready > 0 && (items[1].revents & ZMQ_POLLIN)) {
            s_drain_control(&engine); // what a child said before it exited (DRAINED) is read before its exit
            int sig;
            while ((sig = drv_signals_read(signal_fd)) > 0) {
                s_on_signal(&engine, sig);
            }
        }
        if (ready > 0 && (items[0].revents & ZMQ_POLLIN)) {
            for (int i = 0; i < 1000 && (zsock_events(engine.control) & ZMQ_POLLIN); i++) {
                s_on_control(&engine);
            }
        }
        if (ready > 0 && (items[2].revents & ZMQ_POLLIN)) {
            drv_admin_zmq_on_readable(&engine);
        }
        if (ready > 0 && watch && (items[3].revents & ZMQ_POLLIN)) {
            drv_config_watch_on_readable(watch);
        }
        if ((ready > 0 && (items[4].revents & ZMQ_POLLIN)) || (http_due >= 0 && drv_time_mono_ms() >= http_due)) {
            drv_admin_http_run(&engine);
        }
        if (ready > 0 && zap && (items[5].revents & ZMQ_POLLIN)) {
            drv_admin_zap_on_readable(engine.zap);
        }
        if (ready > 0 && probes > 0) {
            drv_probe_runs_on_readable(&engine, items + 10, probes);
        }
        if (ready > 0 && items[7].revents) { // output, or its end (a hang-up alone when it said nothing)
            drv_upgrade_on_readable(&engine);
        }
        if (ready > 0 && (items[6].revents & ZMQ_POLLIN)) {
            drv_opamp_tick(engine.opamp); // an answer arrived: read it now (the next turn's tick sends)
        }
    }
    drv_probe_runs_stop(&engine);
    drv_kube_source_destroy(&resources);
    drv_opamp_destroy(&engine.opamp);
    drv_telemetry_tick(telemetry); // what the shutdown logged goes if it can, without waiting
    drv_telemetry_destroy(&telemetry);
    s_final_reap(&engine);
    drv_config_watch_destroy(&watch);
done:
    drv_telemetry_destroy(&telemetry);
    //  Every waiter of every kind is answered before the HTTP daemon stops.
    drv_admin_waiters_abandon(&engine, "droverd is shutting down");
    drv_taps_stop(&engine);
    drv_sse_stop(&engine);
    drv_admin_http_stop(&engine);
    drv_admin_zmq_stop(&engine);
    drv_opamp_destroy(&engine.opamp);
    json_decref(engine.opamp_saved);
    free(engine.http_token);
    zsock_destroy(&engine.control);
    drv_registry_destroy(&engine);
    drv_timers_destroy(&engine.timers);
    drv_notify_destroy(&engine.notify);
    drv_zygote_link_destroy(&engine.zygote);
    drv_broker_link_destroy(&engine.broker);
    drv_state_saver_destroy(&engine.state);
    free(engine.control_endpoint);
    free(engine.data_endpoint);
    free(engine.bin_dir);
    free(engine.exe_path);
    drv_upgrade_destroy(&engine.upgrade);
    json_decref(engine.handoff);
    drv_config_destroy(&config);
    return rc;
}
