/*  drover-worker — one pipeline instance on one core, started by droverd.
    Usage: drover-worker --control ENDPOINT --instance ID
           drover-worker --probe   (dry_run=instantiate: drv_probe.h)
           drover-worker --check-script   (a Lua script on stdin: exit 0 when it
               compiles, 1 with the syntax error on stdout; for droverd and
               droverctl, which do not link Lua: drv_script_check_exec)
    droverd pins the process before exec and sets argv[0] to the instance id,
    so `ps` shows {group}/{pipeline}@{generation}#{core}. */
#include "drv_probe.h"
#include "drv_worker.h"
#include "drv_zygote.h"
#include "drv_lua.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"
#include "drover/drv_version.h"

#include <czmq.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char *argv[])
{
    int64_t main_us = drv_time_mono_us();
    //  droverd's pre-loaded instance factory: before getopt reorders argv,
    //  whose memory becomes the instances' process titles.
    if (argc == 4 && !strcmp(argv[1], "--zygote")) {
        return drv_zygote_run(atoi(argv[2]), argc, argv);
    }
    //  dry_run=instantiate: a throwaway instance that builds the spec and says what fails.
    if (argc == 2 && !strcmp(argv[1], "--probe")) {
        return drv_probe_main();
    }
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf("drover-worker %s\n", drv_version()); // what an upgrade checks first (docs/operations.md)
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "--check-script")) {
        return drv_lua_check_stdin();
    }
    const char *control = NULL;
    const char *instance = NULL;
    static struct option options[] = {
        {"control", required_argument, 0, 'c'}, {"instance", required_argument, 0, 'i'}, {0, 0, 0, 0}};
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
    int rc = drv_worker_run(control, instance, main_us);
    zsys_shutdown();
    return rc;
}
