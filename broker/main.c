/*  drover-broker — the data-plane broker, started and supervised by droverd.
    Usage: drover-broker --control ENDPOINT --data ENDPOINT [--max-message-bytes N]
           [--front-door-buffer-bytes N] [--heartbeat-ms N] */
#include "drv_broker.h"

#include "drover/drv_limits.h"
#include "drover/drv_log.h"
#include "drover/drv_version.h"

#include <czmq.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char *argv[])
{
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf("drover-broker %s\n", drv_version()); // what an upgrade checks first (docs/operations.md)
        return 0;
    }
    const char *control = NULL;
    const char *data = NULL;
    drv_broker_options_t options = {DRV_LIMIT_MESSAGE_DEFAULT, DRV_LIMIT_FRONT_DOOR_DEFAULT, 1000};
    static struct option long_options[] = {
        {"control", required_argument, 0, 'c'},           {"data", required_argument, 0, 'd'},
        {"max-message-bytes", required_argument, 0, 'm'}, {"front-door-buffer-bytes", required_argument, 0, 'b'},
        {"heartbeat-ms", required_argument, 0, 'h'},      {0, 0, 0, 0}};
    int opt;
    bool bad = false;
    while ((opt = getopt_long(argc, argv, "c:d:m:b:h:", long_options, NULL)) != -1) {
        char *end = NULL;
        if (opt == 'c') {
            control = optarg;
        } else if (opt == 'd') {
            data = optarg;
        } else if (opt == 'm') {
            options.max_message_bytes = strtoll(optarg, &end, 10);
            bad |= !*optarg || *end;
        } else if (opt == 'b') {
            options.front_door_buffer_bytes = strtoll(optarg, &end, 10);
            bad |= !*optarg || *end;
        } else if (opt == 'h') {
            options.heartbeat_ms = strtoll(optarg, &end, 10);
            bad |= !*optarg || *end || options.heartbeat_ms < 1;
        } else {
            return DRV_BROKER_EXIT_USAGE;
        }
    }
    if (bad || !control || !data || options.max_message_bytes < DRV_LIMIT_MESSAGE_FLOOR ||
        options.max_message_bytes > DRV_LIMIT_MESSAGE_CEILING ||
        options.front_door_buffer_bytes < DRV_LIMIT_FRONT_DOOR_FLOOR ||
        options.front_door_buffer_bytes > DRV_LIMIT_FRONT_DOOR_CEILING) {
        fprintf(stderr, "usage: drover-broker --control ENDPOINT --data ENDPOINT [--max-message-bytes N] "
                        "[--front-door-buffer-bytes N] [--heartbeat-ms N]\n");
        return DRV_BROKER_EXIT_USAGE;
    }
    drv_log_init("broker");
    zsys_handler_set(NULL);
    zsys_init();
    int rc = drv_broker_run(control, data, &options);
    zsys_shutdown();
    return rc;
}
