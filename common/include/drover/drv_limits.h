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

//  Nesting of a PipelineSpec (maps and lists inside one another). The
//  supervisor refuses deeper specs on every way in. Every msgpack decoder
//  stops at DRV_MPCHECK_MAX_DEPTH (32, msgpack-c's own limit), and a spec
//  travels inside a message (the worker's SPEC: one level more; the zmq
//  admin envelope: three), so a spec the supervisor accepts always reaches
//  the worker whole.
#define DRV_LIMIT_SPEC_DEPTH 24

//  Policy numbers (policies.rollout, policies.restart).
#define DRV_LIMIT_TIMEOUT_SECS 86400 // step, drain and window seconds: one day
#define DRV_LIMIT_BACKOFF_MS 3600000 // restart backoffs: one hour
#define DRV_LIMIT_RESTARTS 1000000

//  Node config numbers.
#define DRV_SYSLOG_FRAME_LIMIT (1 << 20) // receiver:syslog's largest max_message_bytes
#define DRV_LIMIT_HWM 1000000            // exporter:zmq hwm (messages)
#define DRV_LIMIT_RATE 1000000000        // receiver:generator rate (records/s)
#define DRV_LIMIT_SCRIPT (1024 * 1024)   // processor:lua script, bytes
#define DRV_LIMIT_PATH 4095              // exporter:file path, bytes
#define DRV_LIMIT_ENDPOINT 255           // any endpoint, bytes
#define DRV_LIMIT_IPC_PATH 107           // an ipc:// path: sizeof(sun_path) - 1

//  engine.limits.front_door_buffer_bytes: what one front door buffers over
//  all its producers before it holds them back.
#define DRV_LIMIT_FRONT_DOOR_DEFAULT (64LL * 1024 * 1024)
#define DRV_LIMIT_FRONT_DOOR_FLOOR (1024LL * 1024)
#define DRV_LIMIT_FRONT_DOOR_CEILING (16LL * 1024 * 1024 * 1024)

//  engine.data_dirs entries and engine.admin.http_hosts entries.
#define DRV_LIMIT_DATA_DIRS 32
#define DRV_LIMIT_HTTP_HOSTS 32

#endif
