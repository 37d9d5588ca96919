/*  drv_spec_nodes — the nodes map of a PipelineSpec: each node's type, its
    config judged by its kind's schema (worker/nodes/, registered with
    drv_spec_set_kinds), its edges, and the graph: no cycle, everything
    reachable from a receiver, at least one receiver and one exporter. */
#include "drv_spec_internal.h"

#include "drover/drv_limits.h"
#include "drover/drv_suggest.h"

#include <czmq.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>

//  The node kinds this program knows (drv_spec_set_kinds), in table order.
static const drv_node_schema_t *const *s_kinds;
static size_t s_kind_count;
static const char *s_kind_names_of[64]; // their names, for suggestions

static drv_script_check_fn *s_script_check;
static void *s_script_check_arg;

void drv_spec_set_script_check(drv_script_check_fn *check, void *arg)
{
    s_script_check = check;
    s_script_check_arg = arg;
}

int drv_spec_check_script(const char *text, size_t length, char *err, size_t errlen)
{
    return s_script_check ? s_script_check(s_script_check_arg, text, length, err, errlen) : 1;
}

void drv_spec_set_kinds(const drv_node_schema_t *const *kinds, size_t count)
{
    s_kinds = kinds;
    s_kind_count = count < 64 ? count : 64;
    for (size_t i = 0; i < s_kind_count; i++) {
        s_kind_names_of[i] = kinds[i]->name;
    }
}

const drv_node_schema_t *const *drv_spec_kinds(size_t *count)
{
    *count = s_kind_count;
    return s_kinds;
}

const drv_node_schema_t *drv_spec_kind(const char *name)
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
        if (strncmp(path, dir, len) == 0 &&
            (path[len] == '/' || path[len] == 0 || len == 1)) { // the dir itself is inside
            return true;
        }
    }
    return false;
}

const char *const *drv_spec_check_env_names(const drv_spec_check_t *check)
{
    return check->env ? check->env->env_names : NULL;
}

bool drv_spec_check_path_allowed(const drv_spec_check_t *check, const char *path)
{
    return drv_spec_path_allowed(check->env, path);
}

//  Where an ipc:// endpoint of a pipeline may be, and what may be there:
//  binding one unlinks whatever has its name, so an existing file that is
//  not a socket is refused and left alone.
static void s_check_ipc(ctx_t *ctx, const char *path, const char *file)
{
    struct stat st;
    if (strlen(file) == 0 || strlen(file) > DRV_LIMIT_IPC_PATH) {
        drv_spec_check_problem(ctx, path, "ipc:// path must be 1 to %d bytes", DRV_LIMIT_IPC_PATH);
    } else if (!drv_spec_path_allowed(ctx->env, file)) {
        drv_spec_check_problem(ctx, path, "%s is outside engine.data_dirs and run_dir", file);
    } else if (lstat(file, &st) == 0 && !S_ISSOCK(st.st_mode)) {
        drv_spec_check_problem(ctx, path, "%s exists and is not a socket; refusing to replace it", file);
    }
}

//  An exporter:file path, before {core}, {generation} and {pipeline} are
//  filled in (they never add a "/" or "..").
static void s_check_file_path(ctx_t *ctx, const char *path, const char *file)
{
    if (strlen(file) > DRV_LIMIT_PATH) {
        drv_spec_check_problem(ctx, path, "path longer than %d bytes", DRV_LIMIT_PATH);
    } else if (!drv_spec_path_allowed(ctx->env, file)) {
        drv_spec_check_problem(ctx, path, "%s is outside engine.data_dirs and run_dir (absolute, without \"..\")",
                               file);
    }
}

static void s_check_key(ctx_t *ctx, const char *path, const drv_config_key_t *def, json_t *value)
{
    switch (def->kind) {
    case DRV_KEY_STRING:
        if (!json_is_string(value) || json_string_length(value) == 0) {
            drv_spec_check_problem(ctx, path, "must be a non-empty string");
        }
        break;
    case DRV_KEY_ENDPOINT:
        if (!json_is_string(value)) {
            drv_spec_check_problem(ctx, path, "must be a string");
        } else if (json_string_length(value) > DRV_LIMIT_ENDPOINT) {
            drv_spec_check_problem(ctx, path, "endpoint longer than %d bytes", DRV_LIMIT_ENDPOINT);
        } else if (strncmp(json_string_value(value), "tcp://", 6) != 0 &&
                   strncmp(json_string_value(value), "ipc://", 6) != 0) {
            drv_spec_check_problem(ctx, path, "endpoint \"%s\" must start with tcp:// or ipc://",
                                   json_string_value(value));
        } else if (strncmp(json_string_value(value), "ipc://", 6) == 0) {
            s_check_ipc(ctx, path, json_string_value(value) + 6);
        }
        break;
    case DRV_KEY_NONNEG_INT: {
        int64_t maximum = def->maximum ? def->maximum : INT64_MAX;
        if (!json_is_integer(value) || json_integer_value(value) < 0 || json_integer_value(value) > maximum) {
            drv_spec_check_problem(ctx, path, "must be an integer from 0 to %lld", (long long)maximum);
        }
        break;
    }
    case DRV_KEY_OBJECT:
        if (!json_is_object(value)) {
            drv_spec_check_problem(ctx, path, "must be a map");
        }
        break;
    case DRV_KEY_ANY:
        break;
    case DRV_KEY_FILE_PATH:
        if (!json_is_string(value) || json_string_length(value) == 0) {
            drv_spec_check_problem(ctx, path, "must be a non-empty string");
        } else {
            s_check_file_path(ctx, path, json_string_value(value));
        }
        break;
    case DRV_KEY_BOOL:
        if (!json_is_boolean(value)) {
            drv_spec_check_problem(ctx, path, "must be true or false");
        }
        break;
    case DRV_KEY_STRING_LIST: {
        size_t index;
        json_t *item;
        if (!json_is_array(value)) {
            drv_spec_check_problem(ctx, path, "must be a list of strings");
            break;
        }
        json_array_foreach(value, index, item)
        {
            if (!json_is_string(item)) {
                drv_spec_check_problem(ctx, path, "item %zu must be a string", index);
            }
        }
        break;
    }
    case DRV_KEY_STRING_MAP: {
        const char *key;
        json_t *item;
        if (!json_is_object(value)) {
            drv_spec_check_problem(ctx, path, "must be a map of strings");
            break;
        }
        json_object_foreach(value, key, item)
        {
            if (!json_is_string(item)) {
                drv_spec_check_problem(ctx, path, "value of \"%s\" must be a string", key);
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
            drv_spec_check_problem(ctx, path, "unknown %s %s (one of: %s)", def->key, shown, def->choices);
        }
        break;
    }
}

//  Validates one node's config against its type and fills in defaults.
static json_t *s_node_config(ctx_t *ctx, const char *node_path, const drv_node_schema_t *type, json_t *config)
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
            //  Say what it takes, and what was probably meant.
            const char *names[DRV_NODE_MAX_KEYS];
            char list[400] = "";
            size_t n = 0;
            for (; n < DRV_NODE_MAX_KEYS && type->keys[n].key; n++) {
                names[n] = type->keys[n].key;
                size_t used = strlen(list);
                snprintf(list + used, sizeof list - used, "%s%s", n ? ", " : "", names[n]);
            }
            const char *guess = drv_suggest(key, names, n);
            char hint[100] = "";
            if (guess) {
                snprintf(hint, sizeof hint, "did you mean %s? ", guess);
            }
            snprintf(path, sizeof path, "%s.config.%s", node_path, key);
            drv_spec_check_problem(ctx, path, "unknown config key \"%s\" for %s (%s%s%s)", key, type->name, hint,
                                   n ? "it takes: " : "it takes no config", list);
        }
    }
    for (int i = 0; i < DRV_NODE_MAX_KEYS && type->keys[i].key; i++) {
        const drv_config_key_t *def = &type->keys[i];
        snprintf(path, sizeof path, "%s.config.%s", node_path, def->key);
        value = json_object_get(config, def->key);
        if (!value) {
            if (def->required) {
                drv_spec_check_problem(ctx, path, "required");
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
    if (type->complete) {
        type->complete(ctx, node_path, result);
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
        drv_spec_check_problem(ctx, path, "cycle through node \"%s\"", id);
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

json_t *drv_spec_nodes(ctx_t *ctx, json_t *nodes)
{
    if (!json_is_object(nodes) || json_object_size(nodes) == 0) {
        drv_spec_check_problem(ctx, "nodes", "must be a non-empty map of node id to node");
        return json_object();
    }
    if (json_object_size(nodes) > DRV_LIMIT_NODES) {
        drv_spec_check_problem(ctx, "nodes", "%zu nodes; a pipeline has at most %d", json_object_size(nodes),
                               DRV_LIMIT_NODES);
        return json_object();
    }
    json_t *result = json_object();
    const char *id;
    json_t *node;
    int receivers = 0, exporters = 0;
    bool untyped = false;  // a node whose type is missing or unknown: it may be the receiver (or exporter)
    bool dangling = false; // an edge to no node: reachability cannot be judged
    char path[600];
    json_object_foreach(nodes, id, node)
    {
        snprintf(path, sizeof path, "nodes.%s", id);
        if (!drv_spec_valid_id(id)) {
            drv_spec_check_problem(ctx, path, "node id \"%s\" must match [a-z0-9_-]{1,63}", id);
        }
        if (!json_is_object(node)) {
            drv_spec_check_problem(ctx, path, "must be a map with type, config and to");
            continue;
        }
        const char *key;
        json_t *value;
        json_object_foreach(node, key, value)
        {
            if (strcmp(key, "type") && strcmp(key, "config") && strcmp(key, "to")) {
                char key_path[700];
                snprintf(key_path, sizeof key_path, "%s.%s", path, key);
                drv_spec_check_problem(ctx, key_path, "unknown key \"%s\" (a node has type, config, to)", key);
            }
        }
        json_t *type_name = json_object_get(node, "type");
        const drv_node_schema_t *type = json_is_string(type_name) ? drv_spec_kind(json_string_value(type_name)) : NULL;
        char type_path[700];
        snprintf(type_path, sizeof type_path, "%s.type", path);
        if (!json_is_string(type_name)) {
            char names[600];
            s_kind_names(names, sizeof names);
            drv_spec_check_problem(ctx, type_path, "required: one of %s", names);
        } else if (!type) {
            char names[600];
            s_kind_names(names, sizeof names);
            const char *guess = drv_suggest(json_string_value(type_name), s_kind_names_of, s_kind_count);
            char hint[100] = "";
            if (guess) {
                snprintf(hint, sizeof hint, "did you mean %s? ", guess);
            }
            drv_spec_check_problem(ctx, type_path, "unknown node type \"%s\" (%sone of: %s)",
                                   json_string_value(type_name), hint, names);
        }
        untyped |= !type;
        json_t *config = json_object_get(node, "config");
        if (config && !json_is_object(config) && !json_is_null(config)) {
            char config_path[700];
            snprintf(config_path, sizeof config_path, "%s.config", path);
            drv_spec_check_problem(ctx, config_path, "must be a map");
            config = NULL;
        }
        json_t *to = json_object_get(node, "to");
        char to_path[700];
        snprintf(to_path, sizeof to_path, "%s.to", path);
        json_t *derived = type && type->targets && config ? type->targets(config) : NULL;
        if (derived) {
            to = derived; // its routes say where records go; its own to is not used
            snprintf(to_path, sizeof to_path, "%s.config", path);
        }
        if (to && !json_is_array(to) && !json_is_null(to)) {
            drv_spec_check_problem(ctx, to_path, "must be a list of node ids");
            to = NULL;
        }
        json_t *to_list = json_array();
        bool node_dangling = false;
        size_t index;
        json_t *target;
        json_array_foreach(to, index, target)
        {
            if (!json_is_string(target)) {
                drv_spec_check_problem(ctx, to_path, "item %zu must be a node id", index);
                continue;
            }
            json_t *target_node = json_object_get(nodes, json_string_value(target));
            if (!target_node) {
                const char *ids[64];
                size_t n = 0;
                const char *other;
                json_t *unused;
                json_object_foreach(nodes, other, unused)
                {
                    if (n < 64 && strcmp(other, id)) {
                        ids[n++] = other;
                    }
                }
                const char *guess = drv_suggest(json_string_value(target), ids, n);
                drv_spec_check_problem(ctx, to_path, "dangling: no node \"%s\"%s%s%s", json_string_value(target),
                                       guess ? " (did you mean " : "", guess ? guess : "", guess ? "?)" : "");
                dangling = node_dangling = true;
                continue;
            }
            json_t *target_type = json_object_get(target_node, "type");
            if (json_is_string(target_type) && strncmp(json_string_value(target_type), "receiver:", 9) == 0) {
                drv_spec_check_problem(ctx, to_path, "\"%s\" is a receiver and cannot take input",
                                       json_string_value(target));
            }
            json_array_append(to_list, target);
        }
        json_decref(derived);
        if (type) {
            if (type->role == DRV_ROLE_RECEIVER) {
                receivers++;
            }
            if (type->role == DRV_ROLE_EXPORTER) {
                exporters++;
                if (json_array_size(to_list) > 0) {
                    drv_spec_check_problem(ctx, to_path, "an exporter sends nowhere else; remove to");
                }
            } else if (json_array_size(to_list) == 0 && !node_dangling) {
                drv_spec_check_problem(ctx, to_path, "required: where %s sends its records", id);
            }
        }
        json_t *empty = json_object();
        json_t *config_out = type ? s_node_config(ctx, path, type, config ? config : empty) : json_object();
        json_decref(empty);
        json_object_set_new(result, id,
                            json_pack("{s:s, s:o, s:o}", "type",
                                      json_is_string(type_name) ? json_string_value(type_name) : "", "config",
                                      config_out, "to", to_list));
    }
    //  What follows judges the graph as a whole: not when a node's type or
    //  an edge is already wrong (it would only repeat that, differently).
    if (receivers == 0 && !untyped) {
        drv_spec_check_problem(ctx, "nodes", "a pipeline needs at least one receiver");
    }
    if (exporters == 0 && !untyped) {
        drv_spec_check_problem(ctx, "nodes", "a pipeline needs at least one exporter");
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
            if (!untyped && !dangling) {
                snprintf(path, sizeof path, "nodes.%s", id);
                drv_spec_check_problem(ctx, path, "not reachable from any receiver");
            }
        }
    }
    json_decref(colours);
    return result;
}
