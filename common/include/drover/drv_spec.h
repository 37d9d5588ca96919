/*  drv_spec — the PipelineSpec model: validation, defaults, effective cores and
    the canonical hash. One validator for specs from YAML, JSON and msgpack.
    Contract section 3 is the specification. */
#ifndef DRV_SPEC_H
#define DRV_SPEC_H

#include "drover/drv_cpus.h"
#include "drover/drv_node_schema.h"
#include "drover/drv_problems.h"

#include <jansson.h>
#include <stdbool.h>

//  What a spec is judged against besides itself: the CPUs it may use and
//  where its files and ipc:// sockets may be (docs/security.md).
typedef struct {
    const drv_cpus_t *cpus;
    const char *const *data_dirs; // absolute directories; NULL: anywhere
    size_t data_dir_count;
    const char *run_dir;          // always allowed when data_dirs is set
    const char *const *env_names; // ${env:NAME} may name only these (NULL-terminated); NULL: any
} drv_spec_env_t;

//  Validates spec and returns a new normalized copy with every default filled
//  in, or NULL when problems were found (each added to problems with its path
//  prefixed by prefix, which may be "").
json_t *drv_spec_normalize(const json_t *spec, const drv_spec_env_t *env, const char *prefix, drv_problems_t *problems);

//  What changes from before to after, path by path: [{path, from?, to?,
//  diff?}] (from absent: added; to absent: removed), at most max entries,
//  values longer than 120 characters of JSON shown by their size, and a
//  text of several lines changed also as a line diff (drv_line_diff.h).
//  Give it redacted specs (drv_spec_redact) when readers may lack the token.
json_t *drv_spec_diff(const json_t *before, const json_t *after, size_t max);

//  True when path (absolute, no ".." component) lies inside one of env's
//  directories, or anywhere when env confines nothing.
bool drv_spec_path_allowed(const drv_spec_env_t *env, const char *path);

#define DRV_SPEC_REDACTED "(redacted)"
//  A copy of a (normalized) spec for a reader without the admin token: the
//  value of every key a node kind marks secret (each value, for a map) and
//  the password of any user:password@ in a URL read DRV_SPEC_REDACTED.
json_t *drv_spec_redact(const json_t *spec);

//  The CPUs a normalized spec runs on, ascending. Returns the count, or -1.
int drv_spec_cores(const json_t *spec, const drv_cpus_t *cpus, int *cores, int capacity);

//  A canonical hash of a normalized spec (key order ignored): "sha1:<hex>".
//  Caller frees.
char *drv_spec_hash(const json_t *spec);

//  True for a valid node id: [a-z0-9_-]{1,63}.
bool drv_spec_valid_id(const char *id);

//  Policy lookups on a normalized spec.
int64_t drv_spec_policy(const json_t *spec, const char *policy, const char *key);

//  The sockets receiver nodes of a type bind, as [{node, type, endpoint,
//  key, ack}] (new reference): key is the config key naming the endpoint
//  (endpoint; receiver:otlp's grpc_endpoint is a second entry). type NULL:
//  every receiver that binds an endpoint (receiver:zmq in the broker,
//  network receivers in droverd): one endpoint, one node, one pipeline.
json_t *drv_spec_receivers(const json_t *spec, const char *type);
//  drv_spec_receivers(spec, "receiver:zmq").
json_t *drv_spec_zmq_receivers(const json_t *spec);

#endif
