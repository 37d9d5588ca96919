/*  drv_spec — PipelineSpec validation and normalization.
    Every problem is collected with its path; a spec with any problem is not
    normalized, so nothing half-valid ever reaches a running pipeline. What each
    node kind accepts is declared by the kind itself (worker/nodes/), and
    registered here with drv_spec_set_kinds. */
#include "drv_spec_internal.h"

#include "drover/drv_limits.h"

#include <czmq.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *key;
    const char *fallback;
    int64_t minimum;
    int64_t maximum;
} policy_key_t;

//  An optional policy is in the normalized spec only when given, so that a
//  spec without one keeps the hash it had before the policy existed.
static const struct {
    const char *name;
    policy_key_t keys[4];
    bool optional;
} s_policies[] = {
    {"rollout",
     {{"step_timeout_secs", "60", 1, DRV_LIMIT_TIMEOUT_SECS}, {"drain_timeout_secs", "60", 1, DRV_LIMIT_TIMEOUT_SECS}},
     false},
    {"restart",
     {{"max_restarts", "5", 0, DRV_LIMIT_RESTARTS},
      {"window_secs", "60", 1, DRV_LIMIT_TIMEOUT_SECS},
      {"initial_backoff_ms", "100", 1, DRV_LIMIT_BACKOFF_MS},
      {"max_backoff_ms", "30000", 1, DRV_LIMIT_BACKOFF_MS}},
     false},
    {"health", {{"exporter_failing_secs", "30", 1, DRV_LIMIT_TIMEOUT_SECS}}, true},
};

static json_t *s_cores(ctx_t *ctx, json_t *cores, const drv_cpus_t *cpus)
{
    if (!cores || json_is_null(cores)) {
        return json_pack("{s:i}", "count", 1);
    }
    if (!json_is_object(cores) || json_object_size(cores) != 1) {
        drv_spec_check_problem(ctx, "cores", "must be exactly one of {count: N}, {set: [..]}, {all: true}");
        return NULL;
    }
    json_t *count = json_object_get(cores, "count");
    json_t *set = json_object_get(cores, "set");
    json_t *all = json_object_get(cores, "all");
    if (count) {
        if (!json_is_integer(count) || json_integer_value(count) < 1) {
            drv_spec_check_problem(ctx, "cores.count", "must be an integer >= 1");
        } else if (json_integer_value(count) > cpus->count) {
            drv_spec_check_problem(ctx, "cores.count", "%lld cores asked, only %d CPUs allowed",
                                   (long long)json_integer_value(count), cpus->count);
        }
    } else if (set) {
        size_t index;
        json_t *cpu;
        if (!json_is_array(set) || json_array_size(set) == 0) {
            drv_spec_check_problem(ctx, "cores.set", "must be a non-empty list of CPU ids");
            return NULL;
        }
        json_array_foreach(set, index, cpu)
        {
            char path[64];
            snprintf(path, sizeof path, "cores.set[%zu]", index);
            if (!json_is_integer(cpu)) {
                drv_spec_check_problem(ctx, path, "must be a CPU id");
                continue;
            }
            if (json_integer_value(cpu) < 0 || json_integer_value(cpu) >= DRV_CPUS_MAX) {
                drv_spec_check_problem(ctx, path, "CPU %lld is out of range (0 to %d)",
                                       (long long)json_integer_value(cpu), DRV_CPUS_MAX - 1);
                continue;
            }
            if (!drv_cpus_contains(cpus, (int)json_integer_value(cpu))) {
                drv_spec_check_problem(ctx, path, "CPU %lld is not among the CPUs droverd may use",
                                       (long long)json_integer_value(cpu));
            }
            for (size_t j = 0; j < index; j++) {
                if (json_equal(json_array_get(set, j), cpu)) {
                    drv_spec_check_problem(ctx, path, "CPU %lld listed twice", (long long)json_integer_value(cpu));
                }
            }
        }
    } else if (all) {
        if (!json_is_true(all)) {
            drv_spec_check_problem(ctx, "cores.all", "must be true");
        }
    } else {
        drv_spec_check_problem(ctx, "cores", "must be exactly one of {count: N}, {set: [..]}, {all: true}");
        return NULL;
    }
    return json_deep_copy(cores);
}

//  policies.rollout.canary, with its defaults; present only when given (a
//  spec without one keeps the hash it always had).
static json_t *s_canary(ctx_t *ctx, json_t *canary)
{
    if (json_is_null(canary)) {
        return NULL;
    }
    if (!json_is_object(canary)) {
        drv_spec_check_problem(ctx, "policies.rollout.canary",
                               "must be a map {cores, hold_secs, max_error_ratio, auto_promote}");
        return NULL;
    }
    const char *key;
    json_t *value;
    json_object_foreach(canary, key, value)
    {
        if (strcmp(key, "cores") && strcmp(key, "hold_secs") && strcmp(key, "max_error_ratio") &&
            strcmp(key, "auto_promote")) {
            char path[300];
            snprintf(path, sizeof path, "policies.rollout.canary.%s", key);
            drv_spec_check_problem(ctx, path, "unknown key \"%s\" (cores, hold_secs, max_error_ratio, auto_promote)",
                                   key);
        }
    }
    json_t *cores = json_object_get(canary, "cores");
    json_t *hold = json_object_get(canary, "hold_secs");
    json_t *ratio = json_object_get(canary, "max_error_ratio");
    json_t *promote = json_object_get(canary, "auto_promote");
    if (cores &&
        (!json_is_integer(cores) || json_integer_value(cores) < 1 || json_integer_value(cores) > DRV_CPUS_MAX)) {
        drv_spec_check_problem(ctx, "policies.rollout.canary.cores", "must be an integer from 1 to %d", DRV_CPUS_MAX);
    }
    if (hold &&
        (!json_is_integer(hold) || json_integer_value(hold) < 0 || json_integer_value(hold) > DRV_LIMIT_TIMEOUT_SECS)) {
        drv_spec_check_problem(ctx, "policies.rollout.canary.hold_secs", "must be an integer from 0 to %d",
                               DRV_LIMIT_TIMEOUT_SECS);
    }
    if (ratio && (!json_is_number(ratio) || json_number_value(ratio) < 0 || json_number_value(ratio) > 1)) {
        drv_spec_check_problem(ctx, "policies.rollout.canary.max_error_ratio", "must be a number from 0 to 1");
    }
    if (promote && !json_is_boolean(promote)) {
        drv_spec_check_problem(ctx, "policies.rollout.canary.auto_promote", "must be true or false");
    }
    return json_pack("{s:I, s:I, s:f, s:b}", "cores",
                     (json_int_t)(json_is_integer(cores) ? json_integer_value(cores) : 1), "hold_secs",
                     (json_int_t)(json_is_integer(hold) ? json_integer_value(hold) : 30), "max_error_ratio",
                     json_is_number(ratio) ? json_number_value(ratio) : 0.01, "auto_promote",
                     promote ? json_is_true(promote) : true);
}

static json_t *s_policies_of(ctx_t *ctx, json_t *policies)
{
    json_t *result = json_object();
    if (policies && !json_is_object(policies) && !json_is_null(policies)) {
        drv_spec_check_problem(ctx, "policies", "must be a map");
        policies = NULL;
    }
    const char *name;
    json_t *value;
    json_object_foreach(policies, name, value)
    {
        if (strcmp(name, "rollout") && strcmp(name, "restart") && strcmp(name, "buffer") && strcmp(name, "health")) {
            char path[300];
            snprintf(path, sizeof path, "policies.%s", name);
            drv_spec_check_problem(ctx, path, "unknown policy \"%s\" (rollout, restart, buffer, health)", name);
        }
    }
    for (size_t p = 0; p < sizeof s_policies / sizeof s_policies[0]; p++) {
        char path[300];
        json_t *given = json_object_get(policies, s_policies[p].name);
        snprintf(path, sizeof path, "policies.%s", s_policies[p].name);
        if (given && !json_is_object(given)) {
            drv_spec_check_problem(ctx, path, "must be a map");
            given = NULL;
        }
        json_t *out = json_object();
        const char *key;
        json_object_foreach(given, key, value)
        {
            bool known = !strcmp(s_policies[p].name, "rollout") && !strcmp(key, "canary");
            for (int k = 0; k < 4 && s_policies[p].keys[k].key; k++) {
                known |= strcmp(s_policies[p].keys[k].key, key) == 0;
            }
            if (!known) {
                snprintf(path, sizeof path, "policies.%s.%s", s_policies[p].name, key);
                drv_spec_check_problem(ctx, path, "unknown key \"%s\"", key);
            }
        }
        for (int k = 0; k < 4 && s_policies[p].keys[k].key; k++) {
            const policy_key_t *def = &s_policies[p].keys[k];
            snprintf(path, sizeof path, "policies.%s.%s", s_policies[p].name, def->key);
            value = json_object_get(given, def->key);
            if (!value) {
                json_object_set_new(out, def->key, json_loads(def->fallback, JSON_DECODE_ANY, NULL));
            } else if (!json_is_integer(value) || json_integer_value(value) < def->minimum ||
                       json_integer_value(value) > def->maximum) {
                drv_spec_check_problem(ctx, path, "must be an integer from %lld to %lld", (long long)def->minimum,
                                       (long long)def->maximum);
            } else {
                json_object_set(out, def->key, value);
            }
        }
        if (!s_policies[p].optional || (given && !json_is_null(given))) {
            json_object_set_new(result, s_policies[p].name, out);
        } else {
            json_decref(out);
        }
    }
    json_t *canary = json_object_get(json_object_get(policies, "rollout"), "canary");
    if (canary && json_is_object(json_object_get(policies, "rollout"))) {
        json_t *normal = s_canary(ctx, canary);
        if (normal) {
            json_object_set_new(json_object_get(result, "rollout"), "canary", normal);
        }
    }
    //  Present only when given, as the canary: a spec without one keeps its hash.
    json_t *buffer = json_object_get(policies, "buffer");
    if (buffer && !json_is_null(buffer)) {
        json_t *normal = drv_spec_buffer(ctx, buffer);
        if (normal) {
            json_object_set_new(result, "buffer", normal);
        }
    }
    json_t *restart = json_object_get(result, "restart");
    json_t *initial = json_object_get(restart, "initial_backoff_ms");
    json_t *maximum = json_object_get(restart, "max_backoff_ms");
    if (initial && maximum && json_integer_value(initial) > json_integer_value(maximum)) {
        drv_spec_check_problem(ctx, "policies.restart.initial_backoff_ms", "must not exceed max_backoff_ms");
    }
    return result;
}

//  How deeply maps and lists nest inside value (a scalar is 0). Also finds
//  strings with a NUL inside (jansson keeps them; C would cut them short),
//  which a YAML "\0" escape can make: *nul is set.
static int s_depth(const json_t *value, int limit, bool *nul)
{
    int deepest = 0;
    if (limit < 0) {
        return 1; // deeper than anyone asked about; stop looking
    }
    if (json_is_string(value)) {
        *nul |= strlen(json_string_value(value)) != json_string_length(value);
        return 0;
    }
    if (json_is_object(value)) {
        const char *key;
        json_t *member;
        json_object_foreach((json_t *)value, key, member)
        {
            int d = s_depth(member, limit - 1, nul);
            deepest = d > deepest ? d : deepest;
        }
        return deepest + 1;
    }
    if (json_is_array(value)) {
        size_t index;
        json_t *item;
        json_array_foreach(value, index, item)
        {
            int d = s_depth(item, limit - 1, nul);
            deepest = d > deepest ? d : deepest;
        }
        return deepest + 1;
    }
    return 0;
}

//  One endpoint is one socket: two receivers of a spec cannot share it.
static void s_endpoints_once(ctx_t *ctx, json_t *nodes)
{
    if (!nodes) {
        return;
    }
    json_t *wrapper = json_pack("{s:O}", "nodes", nodes);
    json_t *receivers = drv_spec_receivers(wrapper, NULL);
    size_t i, k;
    json_t *r, *other;
    json_array_foreach(receivers, i, r)
    {
        json_array_foreach(receivers, k, other)
        {
            if (k < i && json_equal(json_object_get(r, "endpoint"), json_object_get(other, "endpoint"))) {
                char path[120];
                snprintf(path, sizeof path, "nodes.%s.config.%s", json_string_value(json_object_get(r, "node")),
                         json_string_value(json_object_get(r, "key")));
                const char *key = json_string_value(json_object_get(other, "key"));
                drv_spec_check_problem(ctx, path, "%s is node %s's%s%s already",
                                       json_string_value(json_object_get(r, "endpoint")),
                                       json_string_value(json_object_get(other, "node")),
                                       strcmp(key, "endpoint") ? " " : "", strcmp(key, "endpoint") ? key : "");
                break;
            }
        }
    }
    json_decref(receivers);
    json_decref(wrapper);
}

json_t *drv_spec_normalize(const json_t *spec, const drv_spec_env_t *env, const char *prefix, drv_problems_t *problems)
{
    ctx_t ctx = {problems, prefix ? prefix : "", env};
    const drv_cpus_t *cpus = env->cpus;
    size_t before = drv_problems_count(problems);
    if (!json_is_object(spec)) {
        drv_spec_check_problem(&ctx, "", "a PipelineSpec must be a map with cores, nodes, policies");
        return NULL;
    }
    bool nul = false;
    if (s_depth(spec, DRV_LIMIT_SPEC_DEPTH, &nul) > DRV_LIMIT_SPEC_DEPTH) {
        drv_spec_check_problem(&ctx, "", "nested deeper than %d levels", DRV_LIMIT_SPEC_DEPTH);
        return NULL;
    }
    if (nul) {
        drv_spec_check_problem(&ctx, "", "a string holds a NUL character");
        return NULL;
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)spec, key, value)
    {
        if (strcmp(key, "cores") && strcmp(key, "nodes") && strcmp(key, "policies")) {
            drv_spec_check_problem(&ctx, key, "unknown key \"%s\" (a PipelineSpec has cores, nodes, policies)", key);
        }
    }
    json_t *cores = s_cores(&ctx, json_object_get(spec, "cores"), cpus);
    json_t *nodes = drv_spec_nodes(&ctx, json_object_get(spec, "nodes"));
    json_t *policies = s_policies_of(&ctx, json_object_get(spec, "policies"));
    s_endpoints_once(&ctx, nodes);
    if (drv_problems_count(problems) > before) {
        json_decref(cores);
        json_decref(nodes);
        json_decref(policies);
        return NULL;
    }
    return json_pack("{s:o, s:o, s:o}", "cores", cores, "nodes", nodes, "policies", policies);
}

int drv_spec_cores(const json_t *spec, const drv_cpus_t *cpus, int *cores, int capacity)
{
    json_t *desc = json_object_get(spec, "cores");
    json_t *count = json_object_get(desc, "count");
    json_t *set = json_object_get(desc, "set");
    int n = 0;
    if (count) {
        for (int i = 0; i < json_integer_value(count) && i < cpus->count && n < capacity; i++) {
            cores[n++] = cpus->ids[i];
        }
    } else if (set) {
        //  Ascending, whatever order the operator listed them in.
        for (int i = 0; i < cpus->count && n < capacity; i++) {
            size_t index;
            json_t *cpu;
            json_array_foreach(set, index, cpu)
            {
                if (json_integer_value(cpu) == cpus->ids[i]) {
                    cores[n++] = cpus->ids[i];
                }
            }
        }
    } else if (json_is_true(json_object_get(desc, "all"))) {
        for (int i = 0; i < cpus->count && n < capacity; i++) {
            cores[n++] = cpus->ids[i];
        }
    } else {
        return -1;
    }
    return n;
}

char *drv_spec_hash(const json_t *spec)
{
    char *text = json_dumps(spec, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text) {
        return NULL;
    }
    zdigest_t *digest = zdigest_new();
    zdigest_update(digest, (const byte *)text, strlen(text));
    char *result = NULL;
    if (asprintf(&result, "sha1:%s", zdigest_string(digest)) < 0) {
        result = NULL;
    }
    for (char *p = result; p && *p; p++) {
        *p = (char)tolower((unsigned char)*p);
    }
    zdigest_destroy(&digest);
    free(text);
    return result;
}

int64_t drv_spec_policy(const json_t *spec, const char *policy, const char *key)
{
    json_t *value = json_object_get(json_object_get(json_object_get(spec, "policies"), policy), key);
    if (json_is_integer(value)) {
        return json_integer_value(value);
    }
    for (size_t p = 0; p < sizeof s_policies / sizeof s_policies[0]; p++) {
        for (int k = 0; k < 4 && s_policies[p].keys[k].key; k++) {
            if (!strcmp(s_policies[p].name, policy) && !strcmp(s_policies[p].keys[k].key, key)) {
                return strtoll(s_policies[p].keys[k].fallback, NULL, 10);
            }
        }
    }
    return 0;
}

json_t *drv_spec_receivers(const json_t *spec, const char *type)
{
    static const char *const keys[] = {"endpoint", "grpc_endpoint"}; // receiver:otlp binds a second
    json_t *list = json_array();
    const char *id;
    json_t *node;
    json_object_foreach(json_object_get(spec, "nodes"), id, node)
    {
        const char *kind = json_string_value(json_object_get(node, "type"));
        json_t *config = json_object_get(node, "config");
        kind = kind ? kind : "";
        bool wanted = type ? !strcmp(kind, type) : !strncmp(kind, "receiver:", 9);
        for (size_t k = 0; k < 2 && wanted; k++) {
            if (json_is_string(json_object_get(config, keys[k]))) {
                json_array_append_new(list, json_pack("{s:s, s:s, s:O, s:s, s:b}", "node", id, "type", kind, "endpoint",
                                                      json_object_get(config, keys[k]), "key", keys[k], "ack",
                                                      json_is_true(json_object_get(config, "ack"))));
            }
        }
    }
    return list;
}

json_t *drv_spec_zmq_receivers(const json_t *spec)
{
    return drv_spec_receivers(spec, "receiver:zmq");
}
