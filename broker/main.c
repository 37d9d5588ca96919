/*  drover-broker — the data-plane broker, started and supervised by droverd.
    Usage: drover-broker --control ENDPOINT --data ENDPOINT */
#include "drv_broker.h"

#include "drover/drv_log.h"

#include <czmq.h>
#include <getopt.h>
#include <stdio.h>

int main(int argc, char *argv[])
{
    const char *control = NULL;
    const char *data = NULL;
    static struct option options[] = {
        {"control", required_argument, 0, 'c'}, {"data", required_argument, 0, 'd'}, {0, 0, 0, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "c:d:", options, NULL)) != -1) {
        if (opt == 'c') {
            control = optarg;
        } else if (opt == 'd') {
            data = optarg;
        } else {
            return DRV_BROKER_EXIT_USAGE;
        }
    }
    if (!control || !data) {
        fprintf(stderr, "usage: drover-broker --control ENDPOINT --data ENDPOINT\n");
        return DRV_BROKER_EXIT_USAGE;
    }
    drv_log_init("broker");
    zsys_handler_set(NULL);
    zsys_init();
    int rc = drv_broker_run(control, data);
    zsys_shutdown();
    return rc;
}
