/*  drover-broker — the data-plane broker, started and supervised by droverd.
    Usage: drover-broker --control ENDPOINT --data ENDPOINT */
#include "drv_broker.h"

#include "drover/drv_limits.h"
#include "drover/drv_log.h"

#include <czmq.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char *argv[])
{
    const char *control = NULL;
    const char *data = NULL;
    int64_t max_message_bytes = DRV_LIMIT_MESSAGE_DEFAULT;
    static struct option options[] = {{"control", required_argument, 0, 'c'},
                                      {"data", required_argument, 0, 'd'},
                                      {"max-message-bytes", required_argument, 0, 'm'},
                                      {0, 0, 0, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "c:d:m:", options, NULL)) != -1) {
        if (opt == 'c') {
            control = optarg;
        } else if (opt == 'd') {
            data = optarg;
        } else if (opt == 'm') {
            max_message_bytes = strtoll(optarg, NULL, 10);
        } else {
            return DRV_BROKER_EXIT_USAGE;
        }
    }
    if (!control || !data || max_message_bytes < DRV_LIMIT_MESSAGE_FLOOR || max_message_bytes > DRV_LIMIT_MESSAGE_CEILING) {
        fprintf(stderr, "usage: drover-broker --control ENDPOINT --data ENDPOINT [--max-message-bytes N]\n");
        return DRV_BROKER_EXIT_USAGE;
    }
    drv_log_init("broker");
    zsys_handler_set(NULL);
    zsys_init();
    int rc = drv_broker_run(control, data, max_message_bytes);
    zsys_shutdown();
    return rc;
}
