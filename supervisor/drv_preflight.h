/*  drv_preflight — what a start of droverd requires before it serves:
    private directories, a readable token, a readable CURVE key. Checked by
    `droverd --check` without creating anything, and at start. */
#ifndef DRV_PREFLIGHT_H
#define DRV_PREFLIGHT_H

#include "drover/drv_config.h"

#include <stdbool.h>
#include <stddef.h>

//  run_dir holds the control and admin sockets: whoever can write into it
//  can put a socket of theirs where droverd's should be. buffer_dir holds
//  the disk buffers: whoever can write into it can plant a link or a FIFO
//  where a segment should be. So each must be a directory of ours that
//  nobody else may write to (docs/security.md); what names it (run_dir,
//  buffer_dir) is said in the problem. create: made if missing (else only
//  checked when it is there). Returns 0, or -1 with it in why.
int drv_preflight_private_dir(const char *what, const char *path, bool create, char *why, size_t whylen);

//  The bearer token for mutating HTTP requests: the file's first line, at
//  least 16 characters. A copy in *token, or -1 with the problem in why.
int drv_preflight_token(const char *path, char **token, char *why, size_t whylen);

//  droverd --check: what would stop a start once the config file is
//  valid (run_dir and buffer_dir's ownership and mode, the token file, the
//  CURVE key), checked without creating anything. DRV_EXIT_OK, or
//  DRV_EXIT_CONFIG (100) whatever the problem, with it in why.
int drv_supervisor_check(const drv_config_t *config, char *why, size_t whylen);

#endif
