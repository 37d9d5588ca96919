/*  drv_supervisor — droverd's loop: the control socket, signals, the broker,
    every pipeline's instances, and an orderly shutdown. */
#ifndef DRV_SUPERVISOR_H
#define DRV_SUPERVISOR_H

#include "drover/drv_config.h"

#include <jansson.h>

//  Exit codes of droverd (docs/operations.md, Running).
#define DRV_EXIT_OK 0
#define DRV_EXIT_CONFIG 100
#define DRV_EXIT_SYSTEM 111

//  Runs until shut down; takes ownership of config. signal_fd comes from
//  drv_signals_open(), called before any thread started. bin_dir: where
//  drover-worker and drover-broker are (beside droverd's file). exe and argv: how it was started (an
//  upgrade executes them again); handoff: what the droverd before an
//  upgrade handed over (owned from here), or NULL.
int drv_supervisor_run(drv_config_t *config, const drv_cpus_t *cpus, const char *bin_dir, const char *exe, char **argv,
                       int signal_fd, json_t *handoff);

#endif
