/*  drv_supervisor — droverd's loop: the control socket, signals, the broker,
    every pipeline's instances, and an orderly shutdown. */
#ifndef DRV_SUPERVISOR_H
#define DRV_SUPERVISOR_H

#include "drover/drv_config.h"

//  Exit codes of droverd (docs/operations.md, Running).
#define DRV_EXIT_OK 0
#define DRV_EXIT_CONFIG 100
#define DRV_EXIT_SYSTEM 111

//  Runs until shut down; takes ownership of config. signal_fd comes from
//  drv_signals_open(), called before any thread started.
//  droverd --check: what would stop a start once the config file is
//  valid (run_dir and buffer_dir's ownership and mode, the token file, the
//  CURVE key), checked without creating anything. DRV_EXIT_OK, or
//  DRV_EXIT_CONFIG (100) whatever the problem, with it in why.
int drv_supervisor_check(const drv_config_t *config, char *why, size_t whylen);

int drv_supervisor_run(drv_config_t *config, const drv_cpus_t *cpus, const char *bin_dir, int signal_fd);

#endif
