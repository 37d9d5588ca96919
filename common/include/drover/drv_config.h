/*  drv_config — the engine configuration file (docs/operations.md, Configuration): YAML in,
    validated settings and normalized PipelineSpecs out. */
#ifndef DRV_CONFIG_H
#define DRV_CONFIG_H

#include "drover/drv_cpus.h"
#include "drover/drv_spec.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define DRV_CONFIG_MAX_BYTES (16 * 1024 * 1024) // a larger config file is refused

typedef struct {
    char *path;                     // the file this came from
    char *run_dir;                  // ipc sockets live here; created 0700
    char *admin_zmq;                // admin ROUTER endpoint
    char *admin_events;             // events PUB endpoint
    char *admin_http;               // host:port, or "" for no HTTP
    char *http_token_file;          // NULL: no bearer token required
    bool admin_insecure;            // allow tcp without CURVE / public HTTP without token
    char *curve_server_secret_file; // zcert secret file of the admin sockets, or NULL
    char *curve_clients_dir;        // directory of client public certs allowed in
    int shutdown_timeout_secs;      // SIGTERM: drain within this, then SIGKILL
    int heartbeat_interval_ms;      // workers heartbeat this often; 3 missed = unhealthy
    int credit_window;              // batches the broker may have in flight per instance
    char *state_file;               // where applied specs are kept across restarts, or NULL
    char *buffer_dir;      // disk buffers (policies.buffer type: disk) live under it (docs/operations.md, disk buffers)
    bool watch_config;     // reload when the file changes (inotify), as SIGHUP does
    int max_pipelines;     // engine.limits: pipelines across all groups
    int max_message_bytes; // engine.limits: one producer message at a front door
    int64_t front_door_buffer_bytes; // engine.limits: what one front door buffers, all producers
    int64_t stream_queue_bytes;      // engine.limits: unread bytes one event-stream or tap client may have queued
    char **data_dirs;                // engine.data_dirs (absolute), or NULL: files anywhere
    size_t data_dir_count;
    char **http_hosts; // engine.admin.http_hosts: more accepted Host values
    size_t http_host_count;
    json_t *opamp;      // engine.opamp normalized (drv_config_internal.h), or NULL: no OpAMP agent
    json_t *telemetry;  // engine.telemetry.otlp normalized (drv_config_telemetry.c), or NULL: none pushed
    json_t *kubernetes; // engine.kubernetes normalized (drv_config_internal.h), or NULL: no resources watched
    char **opamp_env;   // engine.opamp.allowed_env: what ${env:} may name in a remote config (NULL: nothing)
    size_t opamp_env_count;
    bool remote;    // judging a remote config's groups: ${env:} confined to opamp_env
    json_t *groups; // {group: {pipeline: normalized spec}}
} drv_config_t;

//  What specs are judged against under this config (drv_spec_normalize).
drv_spec_env_t drv_config_spec_env(const drv_config_t *self, const drv_cpus_t *cpus);

//  "host:port" (host an IPv4 address, localhost or [IPv6]; port 1-65535,
//  digits only) into host (brackets removed) and port. Returns 0 or -1.
int drv_config_hostport(const char *text, char *host, size_t hostlen, int *port);

//  Loads and validates a file. Returns NULL with a one-line reason in err,
//  "FILE:LINE: FIELD: message", when anything is wrong.
drv_config_t *drv_config_load(const char *path, const drv_cpus_t *cpus, char *err, size_t errlen);

//  The same from text (path is only used in messages).
drv_config_t *drv_config_parse(const char *text, size_t size, const char *path, const drv_cpus_t *cpus, char *err,
                               size_t errlen);

void drv_config_destroy(drv_config_t **self_p);

//  A remote config's text (YAML or JSON holding groups:, as the config file
//  does) checked under the running engine's settings (config: data_dirs,
//  limits): {group: {pipeline: normalized spec}} (new reference), or NULL
//  with what is wrong in problems.
json_t *drv_config_groups_parse(const drv_config_t *config, const char *text, size_t size, const drv_cpus_t *cpus,
                                drv_problems_t *problems);

#endif
