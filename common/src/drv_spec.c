/*  drv_spec — PipelineSpec validation and normalization.
    Every problem is collected with its path; a spec with any problem is not
    normalized, so nothing half-valid ever reaches a running pipeline. What each
    node kind accepts is declared by the kind itself (worker/nodes/), and
    registered here with drv_spec_set_kinds. */
#include "drover/drv_limits.h"
#include "drover/drv_spec.h"

#include <czmq.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

//  The node kinds this program knows (drv_spec_set_kinds), in table order.
static const drv_node_schema_t *const *s_kinds;
static size_t s_kind_count;

void drv_spec_set_kinds(const drv_node_schema_t *const *kinds, size_t count)
{
    s_kinds = kinds;
    s_kind_count = count;
}

typedef struct {
    const char *key;
    const char *fallback;
    int64_t minimum;
    int64_t maximum;
} policy_key_t;

static const struct {
    const char *name;
    policy_key_t keys[4];
} s_policies[] = {
    {"rollout",
     {{"step_timeout_secs", "60", 1, DRV_LIMIT_TIMEOUT_SECS}, {"drain_timeout_secs", "60", 1, DRV_LIMIT_TIMEOUT_SECS}}},
    {"restart",
     {{"max_restarts", "5", 0, DRV_LIMIT_RESTARTS},
      {"window_secs", "60", 1, DRV_LIMIT_TIMEOUT_SECS},
      {"initial_backoff_ms", "100", 1, DRV_LIMIT_BACKOFF_MS},
      {"max_backoff_ms", "30000", 1, DRV_LIMIT_BACKOFF_MS}}},
};

struct drv_spec_check_t {
    drv_problems_t *problems;
    const char *prefix;
    const drv_spec_env_t *env;
};
typedef drv_spec_check_t ctx_t;

static void s_problem(ctx_t *ctx, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void s_problem(ctx_t *ctx, const char *path, const char *fmt, ...)
{
    char message[400];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    char full[600];
    snprintf(full, sizeof full, "%s%s%s", ctx->prefix, ctx->prefix[0] && path[0] ? "." : "", path);
    drv_problems_add(ctx->problems, full, "%s", message);
}

void drv_spec_check_problem(drv_spec_check_t *check, const char *path, const char *fmt, ...)
{
    char message[400];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    s_problem(check, path, "%s", message);
}

static const drv_node_schema_t *s_node_type(const char *name)
{
    for (size_t i = 0; i < s_kind_count; i++) {
        if (strcmp(s_kinds[i]->name, name) == 0) {
            return s_kinds[i];
        }
    }
    return NULL;
}

//  "receiver:zmq, receiver:generator, ..." for messages.
static void s_kind_names(char *out, size_t outlen)
{
    size_t used = 0;
    out[0] = 0;
    for (size_t i = 0; i < s_kind_count && used < outlen; i++) {
        used += (size_t)snprintf(out + used, outlen - used, "%s%s", i ? ", " : "", s_kinds[i]->name);
    }
}

bool drv_spec_valid_id(const char *id)
{
    size_t len = strlen(id);
    if (len < 1 || len > 63) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) {
            return false;
        }
    }
    return true;
}

static bool s_in_choices(const char *choices, const char *value)
{
    size_t len = strlen(value);
    const char *p = choices;
    while (*p) {
        const char *end = strchr(p, ' ');
        size_t word = end ? (size_t)(end - p) : strlen(p);
        if (word == len && strncmp(p, value, len) == 0) {
            return true;
        }
        p += word + (end ? 1 : 0);
    }
    return false;
}

bool drv_spec_path_allowed(const drv_spec_env_t *env, const char *path)
{
    if (!env || !env->data_dirs) {
        return true;
    }
    if (path[0] != '/' || strstr(path, "/../") || (strlen(path) >= 3 && !strcmp(path + strlen(path) - 3, "/.."))) {
        return false;
    }
    for (size_t i = 0; i <= env->data_dir_count; i++) {
        const char *dir = i < env->data_dir_count ? env->data_dirs[i] : env->run_dir;
        if (!dir) {
            continue;
        }
        size_t len = strlen(dir);
        while (len > 1 && dir[len - 1] == '/') {
            len--;
        }
        if (strncmp(path, dir, len) == 0 && (path[len] == '/' || len == 1)) {
            return true;
        }
    }
    return false;
}

//  Where an ipc:// endpoint of a pipeline may be, and what may be there:
//  binding one unlinks whatever has its name, so an existing file that is
//  not a socket is refused and left alone.
static void s_check_ipc(ctx_t *ctx, const char *path, const char *file)
{
    struct stat st;
    if (strlen(file) == 0 || strlen(file) > DRV_LIMIT_IPC_PATH) {
        s_problem(ctx, path, "ipc:// path must be 1 to %d bytes", DRV_LIMIT_IPC_PATH);
    } else if (!drv_spec_path_allowed(ctx->env, file)) {
        s_problem(ctx, path, "%s is outside engine.data_dirs and run_dir", file);
    } else if (lstat(file, &st) == 0 && !S_ISSOCK(st.st_mode)) {
        s_problem(ctx, path, "%s exists and is not a socket; refusing to replace it", file);
    }
}

//  An exporter:file path, before {core}, {generation} and {pipeline} are
//  filled in (they never add a "/" or "..").
static void s_check_file_path(ctx_t *ctx, const char *path, const char *file)
{
    if (strlen(file) > DRV_LIMIT_PATH) {
        s_problem(ctx, path, "path longer than %d bytes", DRV_LIMIT_PATH);
    } else if (!drv_spec_path_allowed(ctx->env, file)) {
        s_problem(ctx, path, "%s is outside engine.data_dirs and run_dir (absolute, without \"..\")", file);
    }
}

static void s_check_key(ctx_t *ctx, const char *path, const drv_config_key_t *def, json_t *value)
{
    switch (def->kind) {
    case DRV_KEY_STRING:
        if (!json_is_string(value) || json_string_length(value) == 0) {
            s_problem(ctx, path, "must be a non-empty string");
        }
        break;
    case DRV_KEY_ENDPOINT:
        if (!json_is_string(value)) {
            s_problem(ctx, path, "must be a string");
        } else if (json_string_length(value) > DRV_LIMIT_ENDPOINT) {
            s_problem(ctx, path, "endpoint longer than %d bytes", DRV_LIMIT_ENDPOINT);
        } else if (strncmp(json_string_value(value), "tcp://", 6) != 0 &&
                   strncmp(json_string_value(value), "ipc://", 6) != 0) {
            s_problem(ctx, path, "endpoint \"%s\" must start with tcp:// or ipc://",
                      json_string_value(value));
        } else if (strncmp(json_string_value(value), "ipc://", 6) == 0) {
            s_check_ipc(ctx, path, json_string_value(value) + 6);
        }
        break;
    case DRV_KEY_NONNEG_INT: {
        int64_t maximum = def->maximum ? def->maximum : INT64_MAX;
        if (!json_is_integer(value) || json_integer_value(value) < 0 || json_integer_value(value) > maximum) {
            s_problem(ctx, path, "must be an integer from 0 to %lld", (long long)maximum);
        }
        break;
    }
    case DRV_KEY_OBJECT:
        if (!json_is_object(value)) {
            s_problem(ctx, path, "must be a map");
        }
        break;
    case DRV_KEY_ANY:
        break;
    case DRV_KEY_FILE_PATH:
        if (!json_is_string(value) || json_string_length(value) == 0) {
            s_problem(ctx, path, "must be a non-empty string");
        } else {
            s_check_file_path(ctx, path, json_string_value(value));
        }
        break;
    case DRV_KEY_BOOL:
        if (!json_is_boolean(value)) {
            s_problem(ctx, path, "must be true or false");
        }
        break;
    case DRV_KEY_STRING_LIST: {
        size_t index;
        json_t *item;
        if (!json_is_array(value)) {
            s_problem(ctx, path, "must be a list of strings");
            break;
        }
        json_array_foreach(value, index, item)
        {
            if (!json_is_string(item)) {
                s_problem(ctx, path, "item %zu must be a string", index);
            }
        }
        break;
    }
    case DRV_KEY_STRING_MAP: {
        const char *key;
        json_t *item;
        if (!json_is_object(value)) {
            s_problem(ctx, path, "must be a map of strings");
            break;
        }
        json_object_foreach(value, key, item)
        {
            if (!json_is_string(item)) {
                s_problem(ctx, path, "value of \"%s\" must be a string", key);
            }
        }
        break;
    }
    case DRV_KEY_CHOICE:
        if (!json_is_string(value) || !s_in_choices(def->choices, json_string_value(value))) {
            char shown[200];
            if (json_is_string(value)) {
                snprintf(shown, sizeof shown, "\"%s\"", json_string_value(value));
            } else {
                snprintf(shown, sizeof shown, "value");
            }
            s_problem(ctx, path, "unknown %s %s (one of: %s)", def->key, shown, def->choices);
        }
        break;
    }
}

//  Validates one node's config against its type and fills in defaults.
static json_t *s_node_config(ctx_t *ctx, const char *node_path, const drv_node_schema_t *type,
                             json_t *config)
{
    char path[600];
    json_t *result = json_object();
    const char *key;
    json_t *value;
    json_object_foreach(config, key, value)
    {
        bool known = false;
        for (int i = 0; i < DRV_NODE_MAX_KEYS && type->keys[i].key; i++) {
            known |= strcmp(type->keys[i].key, key) == 0;
        }
        if (!known) {
            snprintf(path, sizeof path, "%s.config.%s", node_path, key);
            s_problem(ctx, path, "unknown config key \"%s\" for %s", key, type->name);
        }
    }
    for (int i = 0; i < DRV_NODE_MAX_KEYS && type->keys[i].key; i++) {
        const drv_config_key_t *def = &type->keys[i];
        snprintf(path, sizeof path, "%s.config.%s", node_path, def->key);
        value = json_object_get(config, def->key);
        if (!value) {
            if (def->required) {
                s_problem(ctx, path, "required");
            } else if (def->fallback) {
                json_object_set_new(result, def->key, json_loads(def->fallback, JSON_DECODE_ANY, NULL));
            }
            continue;
        }
        s_check_key(ctx, path, def, value);
        json_object_set(result, def->key, value);
    }
    if (type->check) {
        type->check(ctx, node_path, config);
    }
    return result;
}

typedef enum { WHITE = 0, GREY, BLACK } colour_t;

//  Depth-first search from a node: finds cycles and marks what is reachable.
static void s_visit(ctx_t *ctx, json_t *nodes, const char *id, json_t *colours)
{
    json_t *colour = json_object_get(colours, id);
    if (colour && json_integer_value(colour) == GREY) {
        char path[200];
        snprintf(path, sizeof path, "nodes.%s.to", id);
        s_problem(ctx, path, "cycle through node \"%s\"", id);
        return;
    }
    if (colour) {
        return;
    }
    json_object_set_new(colours, id, json_integer(GREY));
    json_t *to = json_object_get(json_object_get(nodes, id), "to");
    size_t index;
    json_t *next;
    json_array_foreach(to, index, next)
    {
        if (json_object_get(nodes, json_string_value(next))) {
            s_visit(ctx, nodes, json_string_value(next), colours);
        }
    }
    json_object_set_new(colours, id, json_integer(BLACK));
}

static json_t *s_nodes(ctx_t *ctx, json_t *nodes)
{
    if (!json_is_object(nodes) || json_object_size(nodes) == 0) {
        s_problem(ctx, "nodes", "must be a non-empty map of node id to node");
        return json_object();
    }
    if (json_object_size(nodes) > DRV_LIMIT_NODES) {
        s_problem(ctx, "nodes", "%zu nodes; a pipeline has at most %d", json_object_size(nodes), DRV_LIMIT_NODES);
        return json_object();
    }
    json_t *result = json_object();
    const char *id;
    json_t *node;
    int receivers = 0, exporters = 0;
    char path[600];
    json_object_foreach(nodes, id, node)
    {
        snprintf(path, sizeof path, "nodes.%s", id);
        if (!drv_spec_valid_id(id)) {
            s_problem(ctx, path, "node id \"%s\" must match [a-z0-9_-]{1,63}", id);
        }
        if (!json_is_object(node)) {
            s_problem(ctx, path, "must be a map with type, config and to");
            continue;
        }
        const char *key;
        json_t *value;
        json_object_foreach(node, key, value)
        {
            if (strcmp(key, "type") && strcmp(key, "config") && strcmp(key, "to")) {
                char key_path[700];
                snprintf(key_path, sizeof key_path, "%s.%s", path, key);
                s_problem(ctx, key_path, "unknown key \"%s\" (a node has type, config, to)", key);
            }
        }
        json_t *type_name = json_object_get(node, "type");
        const drv_node_schema_t *type = json_is_string(type_name) ? s_node_type(json_string_value(type_name)) : NULL;
        char type_path[700];
        snprintf(type_path, sizeof type_path, "%s.type", path);
        if (!json_is_string(type_name)) {
            char names[600];
            s_kind_names(names, sizeof names);
            s_problem(ctx, type_path, "required: one of %s", names);
        } else if (!type) {
            s_problem(ctx, type_path, "unknown node type \"%s\"", json_string_value(type_name));
        }
        json_t *config = json_object_get(node, "config");
        if (config && !json_is_object(config) && !json_is_null(config)) {
            char config_path[700];
            snprintf(config_path, sizeof config_path, "%s.config", path);
            s_problem(ctx, config_path, "must be a map");
            config = NULL;
        }
        json_t *to = json_object_get(node, "to");
        char to_path[700];
        snprintf(to_path, sizeof to_path, "%s.to", path);
        if (to && !json_is_array(to) && !json_is_null(to)) {
            s_problem(ctx, to_path, "must be a list of node ids");
            to = NULL;
        }
        json_t *to_list = json_array();
        size_t index;
        json_t *target;
        json_array_foreach(to, index, target)
        {
            if (!json_is_string(target)) {
                s_problem(ctx, to_path, "item %zu must be a node id", index);
                continue;
            }
            json_t *target_node = json_object_get(nodes, json_string_value(target));
            if (!target_node) {
                s_problem(ctx, to_path, "dangling: no node \"%s\"", json_string_value(target));
                continue;
            }
            json_t *target_type = json_object_get(target_node, "type");
            if (json_is_string(target_type) &&
                strncmp(json_string_value(target_type), "receiver:", 9) == 0) {
                s_problem(ctx, to_path, "\"%s\" is a receiver and cannot take input",
                          json_string_value(target));
            }
            json_array_append(to_list, target);
        }
        if (type) {
            if (type->role == DRV_ROLE_RECEIVER) {
                receivers++;
            }
            if (type->role == DRV_ROLE_EXPORTER) {
                exporters++;
                if (json_array_size(to_list) > 0) {
                    s_problem(ctx, to_path, "an exporter sends nowhere else; remove to");
                }
            } else if (json_array_size(to_list) == 0) {
                s_problem(ctx, to_path, "required: where %s sends its records", id);
            }
        }
        json_t *empty = json_object();
        json_t *config_out = type ? s_node_config(ctx, path, type, config ? config : empty) : json_object();
        json_decref(empty);
        json_object_set_new(result, id,
                            json_pack("{s:s, s:o, s:o}", "type",
                                      json_is_string(type_name) ? json_string_value(type_name) : "",
                                      "config", config_out, "to", to_list));
    }
    if (receivers == 0) {
        s_problem(ctx, "nodes", "a pipeline needs at least one receiver");
    }
    if (exporters == 0) {
        s_problem(ctx, "nodes", "a pipeline needs at least one exporter");
    }
    //  Cycles and reachability, over the ids that exist.
    json_t *colours = json_object();
    json_object_foreach(result, id, node)
    {
        if (strncmp(json_string_value(json_object_get(node, "type")), "receiver:", 9) == 0) {
            s_visit(ctx, result, id, colours);
        }
    }
    json_object_foreach(result, id, node)
    {
        if (!json_object_get(colours, id)) {
            s_visit(ctx, result, id, colours); // still report cycles among orphans
            snprintf(path, sizeof path, "nodes.%s", id);
            s_problem(ctx, path, "not reachable from any receiver");
        }
    }
    json_decref(colours);
    return result;
}

static json_t *s_cores(ctx_t *ctx, json_t *cores, const drv_cpus_t *cpus)
{
    if (!cores || json_is_null(cores)) {
        return json_pack("{s:i}", "count", 1);
    }
    if (!json_is_object(cores) || json_object_size(cores) != 1) {
        s_problem(ctx, "cores", "must be exactly one of {count: N}, {set: [..]}, {all: true}");
        return NULL;
    }
    json_t *count = json_object_get(cores, "count");
    json_t *set = json_object_get(cores, "set");
    json_t *all = json_object_get(cores, "all");
    if (count) {
        if (!json_is_integer(count) || json_integer_value(count) < 1) {
            s_problem(ctx, "cores.count", "must be an integer >= 1");
        } else if (json_integer_value(count) > cpus->count) {
            s_problem(ctx, "cores.count", "%lld cores asked, only %d CPUs allowed",
                      (long long)json_integer_value(count), cpus->count);
        }
    } else if (set) {
        size_t index;
        json_t *cpu;
        if (!json_is_array(set) || json_array_size(set) == 0) {
            s_problem(ctx, "cores.set", "must be a non-empty list of CPU ids");
            return NULL;
        }
        json_array_foreach(set, index, cpu)
        {
            char path[64];
            snprintf(path, sizeof path, "cores.set[%zu]", index);
            if (!json_is_integer(cpu)) {
                s_problem(ctx, path, "must be a CPU id");
                continue;
            }
            if (json_integer_value(cpu) < 0 || json_integer_value(cpu) >= DRV_CPUS_MAX) {
                s_problem(ctx, path, "CPU %lld is out of range (0 to %d)", (long long)json_integer_value(cpu),
                          DRV_CPUS_MAX - 1);
                continue;
            }
            if (!drv_cpus_contains(cpus, (int)json_integer_value(cpu))) {
                s_problem(ctx, path, "CPU %lld is not among the CPUs droverd may use",
                          (long long)json_integer_value(cpu));
            }
            for (size_t j = 0; j < index; j++) {
                if (json_equal(json_array_get(set, j), cpu)) {
                    s_problem(ctx, path, "CPU %lld listed twice", (long long)json_integer_value(cpu));
                }
            }
        }
    } else if (all) {
        if (!json_is_true(all)) {
            s_problem(ctx, "cores.all", "must be true");
        }
    } else {
        s_problem(ctx, "cores", "must be exactly one of {count: N}, {set: [..]}, {all: true}");
        return NULL;
    }
    return json_deep_copy(cores);
}

static json_t *s_policies_of(ctx_t *ctx, json_t *policies)
{
    json_t *result = json_object();
    if (policies && !json_is_object(policies) && !json_is_null(policies)) {
        s_problem(ctx, "policies", "must be a map");
        policies = NULL;
    }
    const char *name;
    json_t *value;
    json_object_foreach(policies, name, value)
    {
        if (strcmp(name, "rollout") && strcmp(name, "restart")) {
            char path[300];
            snprintf(path, sizeof path, "policies.%s", name);
            s_problem(ctx, path, "unknown policy \"%s\" (rollout, restart)", name);
        }
    }
    for (size_t p = 0; p < sizeof s_policies / sizeof s_policies[0]; p++) {
        char path[300];
        json_t *given = json_object_get(policies, s_policies[p].name);
        snprintf(path, sizeof path, "policies.%s", s_policies[p].name);
        if (given && !json_is_object(given)) {
            s_problem(ctx, path, "must be a map");
            given = NULL;
        }
        json_t *out = json_object();
        const char *key;
        json_object_foreach(given, key, value)
        {
            bool known = false;
            for (int k = 0; k < 4 && s_policies[p].keys[k].key; k++) {
                known |= strcmp(s_policies[p].keys[k].key, key) == 0;
            }
            if (!known) {
                snprintf(path, sizeof path, "policies.%s.%s", s_policies[p].name, key);
                s_problem(ctx, path, "unknown key \"%s\"", key);
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
                s_problem(ctx, path, "must be an integer from %lld to %lld", (long long)def->minimum,
                          (long long)def->maximum);
            } else {
                json_object_set(out, def->key, value);
            }
        }
        json_object_set_new(result, s_policies[p].name, out);
    }
    json_t *restart = json_object_get(result, "restart");
    json_t *initial = json_object_get(restart, "initial_backoff_ms");
    json_t *maximum = json_object_get(restart, "max_backoff_ms");
    if (initial && maximum && json_integer_value(initial) > json_integer_value(maximum)) {
        s_problem(ctx, "policies.restart.initial_backoff_ms", "must not exceed max_backoff_ms");
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

json_t *drv_spec_normalize(const json_t *spec, const drv_spec_env_t *env, const char *prefix,
                           drv_problems_t *problems)
{
    ctx_t ctx = {problems, prefix ? prefix : "", env};
    const drv_cpus_t *cpus = env->cpus;
    size_t before = drv_problems_count(problems);
    if (!json_is_object(spec)) {
        s_problem(&ctx, "", "a PipelineSpec must be a map with cores, nodes, policies");
        return NULL;
    }
    bool nul = false;
    if (s_depth(spec, DRV_LIMIT_SPEC_DEPTH, &nul) > DRV_LIMIT_SPEC_DEPTH) {
        s_problem(&ctx, "", "nested deeper than %d levels", DRV_LIMIT_SPEC_DEPTH);
        return NULL;
    }
    if (nul) {
        s_problem(&ctx, "", "a string holds a NUL character");
        return NULL;
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)spec, key, value)
    {
        if (strcmp(key, "cores") && strcmp(key, "nodes") && strcmp(key, "policies")) {
            s_problem(&ctx, key, "unknown key \"%s\" (a PipelineSpec has cores, nodes, policies)",
                      key);
        }
    }
    json_t *cores = s_cores(&ctx, json_object_get(spec, "cores"), cpus);
    json_t *nodes = s_nodes(&ctx, json_object_get(spec, "nodes"));
    json_t *policies = s_policies_of(&ctx, json_object_get(spec, "policies"));
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

json_t *drv_spec_zmq_receivers(const json_t *spec)
{
    json_t *list = json_array();
    const char *id;
    json_t *node;
    json_object_foreach(json_object_get(spec, "nodes"), id, node)
    {
        if (strcmp(json_string_value(json_object_get(node, "type")), "receiver:zmq") == 0) {
            json_t *config = json_object_get(node, "config");
            json_array_append_new(list, json_pack("{s:s, s:O, s:b}", "node", id, "endpoint",
                                                  json_object_get(config, "endpoint"), "ack",
                                                  json_is_true(json_object_get(config, "ack"))));
        }
    }
    return list;
}
