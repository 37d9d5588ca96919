/*  droverd — the drover supervisor. `droverd -c FILE` runs in the foreground
    and is safe as PID 1. Exit codes: 0 clean shutdown, 100 usage or
    configuration error, 111 system failure. */
#include "drv_signals.h"
#include "drv_supervisor.h"
#include "drv_preflight.h"
#include "drv_handoff.h"

#include "drv_schemas.h"

#include "drover/drv_node_schema.h"
#include "drover/drv_config.h"
#include "drover/drv_cpus.h"
#include "drover/drv_log.h"
#include "drover/drv_version.h"

#include <czmq.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void s_usage(FILE *out)
{
    fprintf(out, "usage: droverd -c FILE [--check] | --version\n"
                 "  -c, --config FILE  engine configuration (YAML)\n"
                 "      --check        validate the configuration and exit\n"
                 "      --version      print the version and exit\n"
                 "      --upgrade-check FORMAT\n"
                 "                     whether this droverd can take over from a running one that hands over\n"
                 "                     FORMAT (docs/operations.md, Upgrading drover)\n");
}

//  What `path --version` prints, or "" (its first line).
static void s_version_of(const char *path, char *out, size_t outlen)
{
    out[0] = 0;
    int fds[2];
    if (pipe(fds) != 0) {
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(path, path, "--version", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t n;
    while (pid > 0 && len + 1 < outlen && (n = read(fds[0], out + len, outlen - len - 1)) > 0) {
        len += (size_t)n;
    }
    out[len] = 0;
    out[strcspn(out, "\n")] = 0;
    close(fds[0]);
    if (pid > 0) {
        waitpid(pid, NULL, 0);
    }
}

//  Run by a droverd about to execute this binary in its place: its config
//  loads, the worker and broker beside it are this version, and it reads
//  the handoff format the running one writes. Says "droverd VERSION
//  handoff=N" and exits 0, or why not on stderr and exits 100.
static int s_upgrade_check(const char *format, const char *bin_dir)
{
    char *end = NULL;
    long wanted = strtol(format, &end, 10);
    if (!*format || *end || wanted != DRV_HANDOFF_FORMAT) {
        fprintf(stderr, "droverd %s reads handoff format %d, not %s\n", drv_version(), DRV_HANDOFF_FORMAT, format);
        return DRV_EXIT_CONFIG;
    }
    const char *programs[] = {"drover-worker", "drover-broker"};
    for (size_t i = 0; i < 2; i++) {
        char path[1200], said[200], expected[200];
        snprintf(path, sizeof path, "%s/%s", bin_dir, programs[i]);
        snprintf(expected, sizeof expected, "%s %s", programs[i], drv_version());
        s_version_of(path, said, sizeof said);
        if (strcmp(said, expected) != 0) {
            fprintf(stderr, "%s says \"%s\", expected \"%s\": install every binary of one version\n", path,
                    said[0] ? said : "nothing (it does not run)", expected);
            return DRV_EXIT_CONFIG;
        }
    }
    printf("droverd %s handoff=%d\n", drv_version(), DRV_HANDOFF_FORMAT);
    return DRV_EXIT_OK;
}

int main(int argc, char *argv[])
{
    //  Before anything else, so ZeroMQ's threads inherit the blocked mask and
    //  every signal arrives through the loop's signalfd.
    int signal_fd = drv_signals_open();
    const char *config_path = NULL;
    int check_only = 0;
    const char *upgrade_check = NULL;
    static struct option options[] = {{"config", required_argument, 0, 'c'},
                                      {"check", no_argument, 0, 'k'},
                                      {"upgrade-check", required_argument, 0, 'u'},
                                      {"help", no_argument, 0, 'h'},
                                      {"version", no_argument, 0, 'V'},
                                      {0, 0, 0, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "c:h", options, NULL)) != -1) {
        if (opt == 'c') {
            config_path = optarg;
        } else if (opt == 'k') {
            check_only = 1;
        } else if (opt == 'u') {
            upgrade_check = optarg;
        } else if (opt == 'h') {
            s_usage(stdout);
            return DRV_EXIT_OK;
        } else if (opt == 'V') {
            printf("droverd %s\n", drv_version());
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
    char exe[1024];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        fprintf(stderr, "droverd: cannot find own executable\n");
        drv_config_destroy(&config);
        return DRV_EXIT_SYSTEM;
    }
    exe[len] = 0;
    char bin_dir[1024];
    snprintf(bin_dir, sizeof bin_dir, "%s", exe);
    dirname(bin_dir);
    if (upgrade_check) {
        drv_config_destroy(&config);
        return s_upgrade_check(upgrade_check, bin_dir);
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
    //  What an upgrade executes: the path droverd was started as, so that a
    //  symlink a package moves to a new release is followed anew; a bare
    //  name (found through PATH) falls back to the file itself.
    char invoked[1100];
    char cwd[1024];
    if (argv[0][0] == '/') {
        snprintf(invoked, sizeof invoked, "%s", argv[0]);
    } else if (strchr(argv[0], '/') && getcwd(cwd, sizeof cwd)) {
        snprintf(invoked, sizeof invoked, "%s/%s", cwd, argv[0]);
    } else {
        snprintf(invoked, sizeof invoked, "%s", exe);
    }
    //  After an upgrade in place, what the droverd before handed over.
    json_t *handoff = drv_handoff_take(err, sizeof err);
    if (err[0] || (handoff && !drv_handoff_understood(handoff, err, sizeof err))) {
        fprintf(stderr, "droverd: upgrade: %s; starting afresh\n", err); // checked before: not expected
        json_decref(handoff);
        handoff = NULL;
    }
    zsys_handler_set(NULL);
    zsys_init();
    int rc = drv_supervisor_run(config, &cpus, bin_dir, invoked, argv, signal_fd, handoff);
    zsys_shutdown();
    return rc;
}
