/*  drover-standalone SPEC.json — one pipeline instance without droverd or
    the broker (built with the benchmarks, never installed), the
    way a plain process supervisor (supervisord, systemd) would run it: the
    spec comes from a JSON file, each receiver:zmq binds its own PULL socket,
    SIGTERM exits at once. Nothing is acknowledged, nothing is drained, so what
    sits in a socket queue at exit is lost. It exists as the baseline for
    benchmark B2 (bench/cutover.py), not as a way to run drover. */
#include "drv_dag.h"
#include "drv_nodes.h"
#include "drv_lua.h"
#include "drv_schemas.h"
#include "drv_node.h"
#include "drv_worker.h"

#include "drover/drv_cpus.h"
#include "drover/drv_log.h"
#include "drover/drv_problems.h"
#include "drover/drv_spec.h"
#include "drover/drv_time.h"

#include <czmq.h>
#include <signal.h>

#define MAX_RECEIVERS 16

static volatile sig_atomic_t s_terminating = 0;

static void s_on_signal(int sig)
{
    (void)sig;
    s_terminating = 1;
}

static json_t *s_load_spec(const char *path)
{
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    if (!doc) {
        drv_error("%s:%d: %s", path, jerr.line, jerr.text);
        return NULL;
    }
    drv_cpus_t cpus;
    drv_cpus_allowed(&cpus);
    drv_problems_t *problems = drv_problems_new();
    json_t *raw = json_object_get(doc, "pipeline") ? json_object_get(doc, "pipeline") : doc;
    drv_spec_env_t env = {.cpus = &cpus};
    json_t *spec = drv_spec_normalize(raw, &env, "", problems);
    if (!spec) {
        drv_error("%s: %s: %s", path, drv_problems_path(problems, 0), drv_problems_message(problems, 0));
    }
    drv_problems_destroy(&problems);
    json_decref(doc);
    return spec;
}

static int s_run(const char *spec_path)
{
    struct sigaction action = {.sa_handler = s_on_signal};
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);

    json_t *spec = s_load_spec(spec_path);
    if (!spec) {
        return DRV_WORKER_EXIT_USAGE;
    }
    char err[200];
    drv_dag_identity_t who = {"standalone", "standalone", 1, 0, NULL, 1, NULL};
    drv_dag_t *dag = drv_dag_new(spec, &who, drv_nodes_kinds(), err, sizeof err);
    if (!dag) {
        drv_error("cannot start reason=\"%s\"", err);
        json_decref(spec);
        return DRV_WORKER_EXIT_INIT_FAILED;
    }

    zsock_t *socks[MAX_RECEIVERS];
    const char *nodes[MAX_RECEIVERS];
    zmq_pollitem_t items[MAX_RECEIVERS];
    size_t count = 0;
    int rc = DRV_WORKER_EXIT_OK;
    json_t *receivers = drv_spec_zmq_receivers(spec);
    size_t i;
    json_t *r;
    json_array_foreach(receivers, i, r)
    {
        if (count == MAX_RECEIVERS) {
            break;
        }
        const char *endpoint = json_string_value(json_object_get(r, "endpoint"));
        nodes[count] = json_string_value(json_object_get(r, "node"));
        socks[count] = zsock_new(ZMQ_PULL);
        if (zsock_bind(socks[count], "%s", endpoint) < 0) {
            drv_error("cannot bind endpoint=%s reason=\"%s\"", endpoint, zmq_strerror(zmq_errno()));
            zsock_destroy(&socks[count]);
            rc = DRV_WORKER_EXIT_SYSTEM;
            goto done;
        }
        items[count] = (zmq_pollitem_t){zsock_resolve(socks[count]), 0, ZMQ_POLLIN, 0};
        count++;
    }
    drv_info("ready standalone spec=%s receivers=%zu", spec_path, count);
    while (!s_terminating) {
        int64_t wait_us = -1;
        drv_dag_generate(dag, drv_time_mono_us(), &wait_us);
        long timeout = wait_us < 0 ? 1000 : (long)(wait_us / 1000);
        if (zmq_poll(items, (int)count, timeout) <= 0) {
            continue;
        }
        for (size_t k = 0; k < count; k++) {
            if (!(items[k].revents & ZMQ_POLLIN)) {
                continue;
            }
            zframe_t *frame = zframe_recv(socks[k]);
            if (frame && drv_dag_ingest(dag, nodes[k], zframe_data(frame), zframe_size(frame), err, sizeof err) < 0) {
                drv_warn("rejected producer message node=%s reason=\"%s\"", nodes[k], err);
            }
            zframe_destroy(&frame);
        }
    }
    drv_info("stopping on signal");
done:
    for (size_t k = 0; k < count; k++) {
        zsock_destroy(&socks[k]);
    }
    json_decref(receivers);
    drv_dag_destroy(&dag);
    json_decref(spec);
    return rc;
}

int main(int argc, char *argv[])
{
    if (argc != 2) {
        fprintf(stderr, "usage: drover-standalone SPEC.json\n");
        return DRV_WORKER_EXIT_USAGE;
    }
    drv_log_init("worker[standalone]");
    drv_schemas_register();
    drv_spec_set_script_check(drv_lua_script_check, NULL);
    zsys_handler_set(NULL);
    zsys_init();
    int rc = s_run(argv[1]);
    zsys_shutdown();
    return rc;
}
