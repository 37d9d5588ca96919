/*  drv_ctl_spec_keys — the PipelineSpec's own keys (everything but a node's
    config, which each kind's schema says), for droverctl explain PATH. The
    table in schemas/pipeline_spec.md says the same; test_cli checks that
    every row there is here with the same type and default. */
#include "drv_ctl_commands.h"

#include <string.h>

const drv_ctl_spec_key_t drv_ctl_spec_keys[] = {
    {"cores", "map", "{count: 1}", "exactly one of count (1..allowed CPUs), set (distinct allowed CPU ids), all: true"},
    {"nodes", "map id → node", "—", "ids [a-z0-9_-]{1,63}; at least one receiver and one exporter; a DAG"},
    {"nodes.*.type", "str", "—", "one of the node types (droverctl explain lists them)"},
    {"nodes.*.config", "map", "{}", "only the keys of that type (droverctl explain TYPE)"},
    {"nodes.*.to", "list of ids", "[]",
     "existing, non-receiver nodes; required for receivers and processors; not allowed on exporters"},
    {"policies.rollout.step_timeout_secs", "int ≥ 1", "60", "how long one step of a rollout may take"},
    {"policies.rollout.drain_timeout_secs", "int ≥ 1", "60", "drain, then SIGTERM, then SIGKILL 5 s later"},
    {"policies.rollout.canary", "map", "absent",
     "a replace holds a canary first; absent: no canary, and the spec's hash is what it was"},
    {"policies.rollout.canary.cores", "int 1–1024", "1",
     "cores switched first; at least the old generation's core count: canary by overlap"},
    {"policies.rollout.canary.hold_secs", "int 0–86400", "30",
     "how long the canary is compared with the old generation"},
    {"policies.rollout.canary.max_error_ratio", "number 0–1", "0.01",
     "errors / records in above this, and above the old generation's, fails the hold"},
    {"policies.rollout.canary.auto_promote", "bool", "true", "false: a passed hold waits for promote (or resume)"},
    {"policies.restart.max_restarts", "int ≥ 0", "5", "more restarts than this within the window: degraded"},
    {"policies.restart.window_secs", "int ≥ 1", "60", "the window max_restarts counts in"},
    {"policies.restart.initial_backoff_ms", "int ≥ 1", "100",
     "the first crash in a window restarts at once; the second waits this; then doubling"},
    {"policies.restart.max_backoff_ms", "int ≥ 1", "30000", "the longest wait before a restart"},
    {"policies.health.exporter_failing_secs", "int 1–86400", "30",
     "an exporter that delivered nothing this long while failing makes the pipeline degraded (exporter_failing); "
     "/readyz is not affected"},
    {"policies.buffer.type", "memory or disk", "memory",
     "disk: what a receiver took is in a write-ahead log under engine.buffer_dir before it is answered"},
    {"policies.buffer.max_bytes", "int ≥ 1048576", "1073741824", "the log's size, all cores together"},
    {"policies.buffer.when_full", "block or drop_oldest", "block",
     "block: receivers push back; drop_oldest: the oldest unread input goes, counted"},
    {"policies.buffer.sync", "batch, always or none", "batch",
     "when an input is durable: a group commit every sync_interval_ms, each input, or the page cache"},
    {"policies.buffer.sync_interval_ms", "int 1–10000", "50", "sync: batch's commit interval"},
    {NULL, NULL, NULL, NULL},
};
