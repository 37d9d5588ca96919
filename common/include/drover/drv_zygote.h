/*  drv_zygote — the request and reply droverd and the worker zygote exchange
    over a SOCK_SEQPACKET socketpair (one message each way per instance).

    Starting an instance by fork+exec costs about 6 ms before the worker's
    main() runs, most of it the dynamic loader mapping the ZeroMQ stack's 30
    shared libraries (docs/benchmarks.md). The zygote is a drover-worker that
    has done that once and waits: for each request it forks, the child forks
    the instance and exits, so the instance is orphaned to droverd (the
    nearest subreaper) and becomes droverd's child like any other: droverd
    reaps it, signals it, and it gets the parent-death signal from droverd. */
#ifndef DRV_ZYGOTE_PROTO_H
#define DRV_ZYGOTE_PROTO_H

#include <stdint.h>

#define DRV_ZYGOTE_MAX_FDS 16 // listening sockets passed with a request (SCM_RIGHTS)

typedef struct {
    int32_t core;       // CPU to pin to, or -1
    char instance[200]; // {group}/{pipeline}@{generation}#{core}, NUL-terminated
    char control[600];  // droverd's control endpoint, NUL-terminated
} drv_zygote_request_t;

typedef struct {
    int32_t pid;      // the instance's pid, or 0 on failure
    int32_t err;      // errno of the failure
    char reason[200]; // what failed, NUL-terminated
} drv_zygote_reply_t;

#endif
