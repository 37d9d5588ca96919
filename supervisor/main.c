/*  droverd — the drover supervisor. `droverd -c FILE` runs in the foreground
    and is safe as PID 1. Exit codes: 0 clean shutdown, 100 usage or
    configuration error, 111 system failure. */
#include "drv_signals.h"
#include "drv_supervisor.h"

#include "drv_schemas.h"

#include "drover/drv_node_schema.h"
#include "drover/drv_config.h"
#include "drover/drv_cpus.h"
#include "drover/drv_log.h"

#include <czmq.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void s_usage(FILE *out)
{
    fprintf(out, "usage: droverd -c FILE [--check] | --version\n"
                 "  -c, --config FILE  engine configuration (YAML)\n"
                 "      --check        validate the configuration and exit\n"
                 "      --version      print the version and exit\n");
}

int main(int argc, char *argv[])
{
    //  Before anything else, so ZeroMQ's threads inherit the blocked mask and
    //  every signal arrives through the loop's signalfd.
    int signal_fd = drv_signals_open();
    const char *config_path = NULL;
    int check_only = 0;
    static struct option options[] = {{"config", required_argument, 0, 'c'},
                                      {"check", no_argument, 0, 'k'},
                                      {"help", no_argument, 0, 'h'},
                                      {"version", no_argument, 0, 'V'},
                                      {0, 0, 0, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "c:h", options, NULL)) != -1) {
        if (opt == 'c') {
            config_path = optarg;
        } else if (opt == 'k') {
            check_only = 1;
        } else if (opt == 'h') {
            s_usage(stdout);
            return DRV_EXIT_OK;
        } else if (opt == 'V') {
            printf("droverd %s\n", DROVER_VERSION);
            return DRV_EXIT_OK;
        } else {
            s_usage(stderr);
            return DRV_EXIT_CONFIG;
        }
    }
    if (!config_path || optind != argc) {
        s_usage(stderr);
        return DRV_EXIT_CONFIG;
    }
    drv_log_init("droverd");
    drv_schemas_register();        // specs are validated against every node kind's schema
    drv_script_check_use_worker(); // and scripts by the drover-worker beside droverd
    if (signal_fd < 0) {
        fprintf(stderr, "droverd: cannot set up signals\n");
        return DRV_EXIT_SYSTEM;
    }
    drv_cpus_t cpus;
    if (drv_cpus_allowed(&cpus) != 0) {
        fprintf(stderr, "droverd: sched_getaffinity failed\n");
        return DRV_EXIT_SYSTEM;
    }
    char err[1024];
    drv_config_t *config = drv_config_load(config_path, &cpus, err, sizeof err);
    if (!config) {
        fprintf(stderr, "droverd: %s\n", err);
        return DRV_EXIT_CONFIG;
    }
    if (check_only) {
        int rc = drv_supervisor_check(config, err, sizeof err);
        if (rc != DRV_EXIT_OK) {
            fprintf(stderr, "droverd: %s: %s\n", config_path, err);
        } else {
            printf("%s: ok\n", config_path);
        }
        drv_config_destroy(&config);
        return rc;
    }
    char exe[1024];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        fprintf(stderr, "droverd: cannot find own executable\n");
        drv_config_destroy(&config);
        return DRV_EXIT_SYSTEM;
    }
    exe[len] = 0;
    zsys_handler_set(NULL);
    zsys_init();
    int rc = drv_supervisor_run(config, &cpus, dirname(exe), signal_fd);
    zsys_shutdown();
    return rc;
}
