/*  drv_ctl_args — global options anywhere on the command line, suggestions
    for a mistyped command, and `droverctl completion bash`. */
#ifndef DRV_CTL_ARGS_H
#define DRV_CTL_ARGS_H

#include "drv_ctl_commands.h"

//  Takes the global options (-e, -o, -t, -w, --key, --server-key, and -h
//  before the command) out of argv, wherever they are, into ctl; what is
//  left (the command and its own arguments) is compacted in argv. "--" ends
//  the options. Returns the new argc, or -1 after printing what was wrong.
int drv_ctl_args_take(drv_ctl_t *ctl, int argc, char **argv, bool *help_before_command);

//  Where the engine is when no -e says: $DROVER_ADMIN, else the config
//  file's (-c FILE, else DRV_CTL_CONFIG when it is there) engine.admin.zmq
//  or engine.run_dir's admin.sock, else ipc:///tmp/drover/admin.sock.
//  0, or -1 after printing why (a -c file that cannot be read).
int drv_ctl_args_endpoint(drv_ctl_t *ctl);

//  The command name closest to a mistyped one, or NULL when none is close.
const char *drv_ctl_suggest(const char *name);

//  droverctl completion bash: prints the script.
int drv_ctl_completion(drv_ctl_t *ctl, int argc, char **argv);

#endif
