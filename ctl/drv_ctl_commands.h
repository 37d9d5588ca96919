/*  drv_ctl_commands — droverctl's subcommands, one function each. */
#ifndef DRV_CTL_COMMANDS_H
#define DRV_CTL_COMMANDS_H

#include "drv_ctl_client.h"

#include <stdbool.h>

//  Exit codes of droverctl.
#define DRV_CTL_OK 0
#define DRV_CTL_SERVER_ERROR 1 // the engine answered with an error (>= 400)
#define DRV_CTL_USAGE 2
#define DRV_CTL_UNREACHABLE 3  // no answer from the engine

typedef struct {
    drv_ctl_options_t options;
    bool json;        // -o json
} drv_ctl_t;

typedef struct {
    const char *name;
    const char *usage;   // arguments after the name
    const char *summary;
    int (*run)(drv_ctl_t *ctl, int argc, char **argv); // argv[0] is the command name
} drv_ctl_command_t;

extern const drv_ctl_command_t drv_ctl_commands[];

#endif
