/*  drv_spec_buffer — policies.buffer (docs/operations.md, disk buffers): where a pipeline's
    accepted input waits until every exporter has settled it. `memory` (the
    default) keeps it in the instances; `disk` writes it to a write-ahead
    log under engine.buffer_dir first. */
#include "drv_spec_internal.h"

#include <string.h>

#define DEFAULT_MAX_BYTES 1073741824LL
#define MIN_MAX_BYTES (1LL << 20)
#define MAX_SYNC_INTERVAL_MS 10000

static const char *s_one_of(ctx_t *ctx, json_t *buffer, const char *key, const char *const *allowed,
                            const char *expected)
{
    json_t *value = json_object_get(buffer, key);
    if (!value) {
        return allowed[0];
    }
    for (size_t i = 0; allowed[i] && json_is_string(value); i++) {
        if (!strcmp(json_string_value(value), allowed[i])) {
            return allowed[i];
        }
    }
    char path[100];
    snprintf(path, sizeof path, "policies.buffer.%s", key);
    drv_spec_check_problem(ctx, path, "must be %s", expected);
    return allowed[0];
}

static int64_t s_integer(ctx_t *ctx, json_t *buffer, const char *key, int64_t fallback, int64_t minimum,
                         int64_t maximum)
{
    json_t *value = json_object_get(buffer, key);
    if (!value) {
        return fallback;
    }
    if (!json_is_integer(value) || json_integer_value(value) < minimum || json_integer_value(value) > maximum) {
        char path[100];
        snprintf(path, sizeof path, "policies.buffer.%s", key);
        drv_spec_check_problem(ctx, path, "must be an integer from %lld to %lld", (long long)minimum,
                               (long long)maximum);
        return fallback;
    }
    return json_integer_value(value);
}

json_t *drv_spec_buffer(ctx_t *ctx, json_t *buffer)
{
    if (!json_is_object(buffer)) {
        drv_spec_check_problem(ctx, "policies.buffer",
                               "must be a map {type, max_bytes, when_full, sync, sync_interval_ms}");
        return NULL;
    }
    const char *key;
    json_t *value;
    json_object_foreach(buffer, key, value)
    {
        if (strcmp(key, "type") && strcmp(key, "max_bytes") && strcmp(key, "when_full") && strcmp(key, "sync") &&
            strcmp(key, "sync_interval_ms")) {
            char path[300];
            snprintf(path, sizeof path, "policies.buffer.%s", key);
            drv_spec_check_problem(ctx, path, "unknown key \"%s\" (type, max_bytes, when_full, sync, sync_interval_ms)",
                                   key);
        }
    }
    static const char *const types[] = {"memory", "disk", NULL};
    static const char *const when_full[] = {"block", "drop_oldest", NULL};
    static const char *const sync[] = {"batch", "always", "none", NULL};
    return json_pack("{s:s, s:I, s:s, s:s, s:I}", "type", s_one_of(ctx, buffer, "type", types, "memory or disk"),
                     "max_bytes",
                     (json_int_t)s_integer(ctx, buffer, "max_bytes", DEFAULT_MAX_BYTES, MIN_MAX_BYTES, INT64_MAX / 2),
                     "when_full", s_one_of(ctx, buffer, "when_full", when_full, "block or drop_oldest"), "sync",
                     s_one_of(ctx, buffer, "sync", sync, "batch, always or none"), "sync_interval_ms",
                     (json_int_t)s_integer(ctx, buffer, "sync_interval_ms", 50, 1, MAX_SYNC_INTERVAL_MS));
}
