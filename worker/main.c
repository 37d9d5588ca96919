/*  drover-worker — one pipeline instance on one core, started by droverd.
    Usage: drover-worker --control ENDPOINT --instance ID
    droverd pins the process before exec and sets argv[0] to the instance id,
    so `ps` shows {group}/{pipeline}@{generation}#{core}. */
#include "drv_worker.h"

#include "drover/drv_log.h"

#include <czmq.h>
#include <getopt.h>
#include <stdio.h>

int main(int argc, char *argv[])
{
    const char *control = NULL;
    const char *instance = NULL;
    static struct option options[] = {{"control", required_argument, 0, 'c'},
                                      {"instance", required_argument, 0, 'i'},
                                      {0, 0, 0, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "c:i:", options, NULL)) != -1) {
        if (opt == 'c') {
            control = optarg;
        } else if (opt == 'i') {
            instance = optarg;
        } else {
            return DRV_WORKER_EXIT_USAGE;
        }
    }
    if (!control || !instance) {
        fprintf(stderr, "usage: drover-worker --control ENDPOINT --instance ID\n");
        return DRV_WORKER_EXIT_USAGE;
    }
    char component[160];
    snprintf(component, sizeof component, "worker[%s]", instance);
    drv_log_init(component);
    zsys_handler_set(NULL); // our own signal handling; czmq's would swallow SIGTERM
    zsys_init();
    int rc = drv_worker_run(control, instance);
    zsys_shutdown();
    return rc;
}
