/*  drv_limits — how big things may get, in one place (docs/operations.md,
    "Limits"). Requests past a limit are refused with an error naming it;
    nothing is half applied. */
#ifndef DRV_LIMITS_H
#define DRV_LIMITS_H

//  Nodes in one PipelineSpec (fixed: a spec is valid or not everywhere).
#define DRV_LIMIT_NODES 64

//  engine.limits.max_pipelines: pipelines across all groups.
#define DRV_LIMIT_PIPELINES_DEFAULT 64
#define DRV_LIMIT_PIPELINES_CEILING 1000

//  engine.limits.max_message_bytes: one producer message at a front door.
//  Past twice the limit libzmq drops the producer's connection before the
//  broker sees the message (ZMQ_MAXMSGSIZE), so memory stays bounded.
#define DRV_LIMIT_MESSAGE_DEFAULT (4 * 1024 * 1024)
#define DRV_LIMIT_MESSAGE_FLOOR 1024
#define DRV_LIMIT_MESSAGE_CEILING (256 * 1024 * 1024)

#endif
