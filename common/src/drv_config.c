/*  drv_config — the engine configuration file.
    Validation collects every problem; the caller gets the first one as a single
    line naming file, line and field, plus how many more there are. */
#include "drover/drv_config.h"
#include "drv_config_internal.h"
#include "drover/drv_file.h"
#include "drover/drv_limits.h"
#include "drover/drv_problems.h"
#include "drover/drv_spec.h"
#include "drover/drv_yaml.h"

#include <arpa/inet.h>
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *s_string_or(json_t *obj, const char *key, const char *fallback, drv_problems_t *problems, const char *path)
{
    json_t *value = json_object_get(obj, key);
    if (!value || json_is_null(value)) {
        return fallback ? strdup(fallback) : NULL;
    }
    if (!json_is_string(value)) {
        drv_problems_add(problems, path, "must be a string");
        return fallback ? strdup(fallback) : NULL;
    }
    return strdup(json_string_value(value));
}

static int s_int_or(json_t *obj, const char *key, int fallback, int minimum, int maximum, drv_problems_t *problems,
                    const char *path)
{
    json_t *value = json_object_get(obj, key);
    if (!value) {
        return fallback;
    }
    if (!json_is_integer(value) || json_integer_value(value) < minimum || json_integer_value(value) > maximum) {
        drv_problems_add(problems, path, "must be an integer from %d to %d", minimum, maximum);
        return fallback;
    }
    return (int)json_integer_value(value);
}

int drv_config_hostport(const char *text, char *host, size_t hostlen, int *port)
{
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text || !colon[1] || strlen(colon + 1) > 5) {
        return -1;
    }
    long value = 0;
    for (const char *p = colon + 1; *p; p++) {
        if (*p < '0' || *p > '9') {
            return -1;
        }
        value = value * 10 + (*p - '0');
    }
    if (value < 1 || value > 65535) {
        return -1;
    }
    const char *start = text;
    size_t len = (size_t)(colon - text);
    if (text[0] == '[') {
        if (colon[-1] != ']' || len < 3) {
            return -1;
        }
        start++;
        len -= 2;
    }
    if (len + 1 > hostlen) {
        return -1;
    }
    memcpy(host, start, len);
    host[len] = 0;
    unsigned char addr[16];
    bool ok = strcmp(host, "localhost") == 0 ||
              (text[0] == '[' ? inet_pton(AF_INET6, host, addr) == 1 : inet_pton(AF_INET, host, addr) == 1);
    if (!ok) {
        return -1;
    }
    *port = (int)value;
    return 0;
}

drv_spec_env_t drv_config_spec_env(const drv_config_t *self, const drv_cpus_t *cpus)
{
    static const char *const none[] = {NULL};
    drv_spec_env_t env = {.cpus = cpus,
                          .data_dirs = (const char *const *)self->data_dirs,
                          .data_dir_count = self->data_dir_count,
                          .run_dir = self->run_dir};
    if (self->remote) { // an OpAMP server may read only the variables the local file lists (docs/security.md)
        env.env_names = self->opamp_env ? (const char *const *)self->opamp_env : none;
    }
    return env;
}

//  A list of strings into a NULL-terminated array (count in *count).
static char **s_string_list(json_t *list, const char *path, size_t max, bool absolute, size_t *count,
                            drv_problems_t *problems)
{
    *count = 0;
    if (!list || json_is_null(list)) {
        return NULL;
    }
    if (!json_is_array(list) || json_array_size(list) > max) {
        drv_problems_add(problems, path, "must be a list of at most %zu strings", max);
        return NULL;
    }
    char **out = calloc(json_array_size(list) + 1, sizeof *out);
    size_t index;
    json_t *item;
    json_array_foreach(list, index, item)
    {
        const char *text = json_string_value(item);
        if (!text || !text[0] || strlen(text) > 1000) {
            drv_problems_add(problems, path, "item %zu must be a non-empty string", index);
        } else if (absolute && (text[0] != '/' || strstr(text, "/../") || strstr(text, "/./"))) {
            drv_problems_add(problems, path, "item %zu (%s) must be an absolute path without . or ..", index, text);
        } else {
            out[(*count)++] = strdup(text);
        }
    }
    return out;
}

//  True when an HTTP listen address is on loopback.
static bool s_loopback(const char *hostport)
{
    char host[256];
    snprintf(host, sizeof host, "%s", hostport);
    char *colon = strrchr(host, ':');
    if (colon) {
        *colon = 0;
    }
    if (strcmp(host, "localhost") == 0 || strcmp(host, "[::1]") == 0) {
        return true;
    }
    struct in_addr addr;
    return inet_pton(AF_INET, host, &addr) == 1 && (ntohl(addr.s_addr) >> 24) == 127;
}

//  engine.buffer_dir: given, else beside the state file, else in run_dir;
//  inside data_dirs when those are set (drv_spec_path_allowed).
static void s_buffer_dir(drv_config_t *self, json_t *engine, drv_problems_t *problems)
{
    char fallback[4200];
    const char *slash = self->state_file ? strrchr(self->state_file, '/') : NULL;
    if (self->state_file) {
        snprintf(fallback, sizeof fallback, "%.*s/buffer", slash ? (int)(slash - self->state_file) : 1,
                 slash ? self->state_file : ".");
    } else {
        snprintf(fallback, sizeof fallback, "%s/buffer", self->run_dir ? self->run_dir : "/tmp/drover");
    }
    self->buffer_dir = s_string_or(engine, "buffer_dir", fallback, problems, "engine.buffer_dir");
    drv_spec_env_t env = {.data_dirs = (const char *const *)self->data_dirs,
                          .data_dir_count = self->data_dir_count,
                          .run_dir = self->run_dir};
    if (self->buffer_dir && json_object_get(engine, "buffer_dir") && !drv_spec_path_allowed(&env, self->buffer_dir)) {
        drv_problems_add(problems, "engine.buffer_dir", "%s is outside engine.data_dirs and run_dir", self->buffer_dir);
    }
}

static void s_engine(drv_config_t *self, json_t *engine, drv_problems_t *problems)
{
    if (engine && !json_is_object(engine)) {
        drv_problems_add(problems, "engine", "must be a map");
        engine = NULL;
    }
    drv_problems_unknown_keys(
        problems, engine,
        "run_dir admin shutdown_timeout_secs heartbeat_interval_ms credit_window state_file limits "
        "data_dirs watch_config buffer_dir opamp kubernetes telemetry",
        "engine");
    json_t *watch = json_object_get(engine, "watch_config");
    if (watch && !json_is_boolean(watch)) {
        drv_problems_add(problems, "engine.watch_config", "must be true or false");
    }
    self->watch_config = json_is_true(watch);
    self->data_dirs = s_string_list(json_object_get(engine, "data_dirs"), "engine.data_dirs", DRV_LIMIT_DATA_DIRS, true,
                                    &self->data_dir_count, problems);
    self->run_dir = s_string_or(engine, "run_dir", "/tmp/drover", problems, "engine.run_dir");
    self->shutdown_timeout_secs =
        s_int_or(engine, "shutdown_timeout_secs", 30, 1, 86400, problems, "engine.shutdown_timeout_secs");
    self->heartbeat_interval_ms =
        s_int_or(engine, "heartbeat_interval_ms", 1000, 10, 3600000, problems, "engine.heartbeat_interval_ms");
    self->credit_window = s_int_or(engine, "credit_window", 64, 1, 4096, problems, "engine.credit_window");
    json_t *limits = json_object_get(engine, "limits");
    if (limits && !json_is_object(limits)) {
        drv_problems_add(problems, "engine.limits",
                         "must be a map with max_pipelines, max_message_bytes, front_door_buffer_bytes, "
                         "stream_queue_bytes");
        limits = NULL;
    }
    drv_problems_unknown_keys(problems, limits,
                              "max_pipelines max_message_bytes front_door_buffer_bytes stream_queue_bytes",
                              "engine.limits");
    self->stream_queue_bytes = s_int_or(limits, "stream_queue_bytes", 4 * 1024 * 1024, 16 * 1024, 1024 * 1024 * 1024,
                                        problems, "engine.limits.stream_queue_bytes");
    self->front_door_buffer_bytes = DRV_LIMIT_FRONT_DOOR_DEFAULT;
    json_t *buffer = json_object_get(limits, "front_door_buffer_bytes");
    if (buffer && (!json_is_integer(buffer) || json_integer_value(buffer) < DRV_LIMIT_FRONT_DOOR_FLOOR ||
                   json_integer_value(buffer) > DRV_LIMIT_FRONT_DOOR_CEILING)) {
        drv_problems_add(problems, "engine.limits.front_door_buffer_bytes", "must be an integer from %lld to %lld",
                         (long long)DRV_LIMIT_FRONT_DOOR_FLOOR, (long long)DRV_LIMIT_FRONT_DOOR_CEILING);
    } else if (buffer) {
        self->front_door_buffer_bytes = json_integer_value(buffer);
    }
    self->max_pipelines = s_int_or(limits, "max_pipelines", DRV_LIMIT_PIPELINES_DEFAULT, 1, DRV_LIMIT_PIPELINES_CEILING,
                                   problems, "engine.limits.max_pipelines");
    self->max_message_bytes = s_int_or(limits, "max_message_bytes", DRV_LIMIT_MESSAGE_DEFAULT, DRV_LIMIT_MESSAGE_FLOOR,
                                       DRV_LIMIT_MESSAGE_CEILING, problems, "engine.limits.max_message_bytes");
    self->state_file = s_string_or(engine, "state_file", NULL, problems, "engine.state_file");
    s_buffer_dir(self, engine, problems);
    self->opamp = drv_config_opamp(json_object_get(engine, "opamp"), self->state_file, self->run_dir, problems);
    self->telemetry = drv_config_telemetry(json_object_get(engine, "telemetry"), problems);
    self->kubernetes = drv_config_kubernetes(json_object_get(engine, "kubernetes"), problems);
    self->opamp_env = s_string_list(json_object_get(self->opamp, "allowed_env"), "engine.opamp.allowed_env", 256, false,
                                    &self->opamp_env_count, problems);

    json_t *admin = json_object_get(engine, "admin");
    if (admin && !json_is_object(admin)) {
        drv_problems_add(problems, "engine.admin", "must be a map");
        admin = NULL;
    }
    drv_problems_unknown_keys(problems, admin, "zmq events http http_token_file http_hosts insecure curve",
                              "engine.admin");
    self->http_hosts = s_string_list(json_object_get(admin, "http_hosts"), "engine.admin.http_hosts",
                                     DRV_LIMIT_HTTP_HOSTS, false, &self->http_host_count, problems);
    json_t *curve = json_object_get(admin, "curve");
    if (curve && !json_is_object(curve)) {
        drv_problems_add(problems, "engine.admin.curve", "must be a map with server_secret_file, clients_dir");
        curve = NULL;
    }
    drv_problems_unknown_keys(problems, curve, "server_secret_file clients_dir", "engine.admin.curve");
    if (curve) {
        self->curve_server_secret_file =
            s_string_or(curve, "server_secret_file", NULL, problems, "engine.admin.curve.server_secret_file");
        self->curve_clients_dir = s_string_or(curve, "clients_dir", NULL, problems, "engine.admin.curve.clients_dir");
        if (!self->curve_server_secret_file || !self->curve_clients_dir) {
            drv_problems_add(problems, "engine.admin.curve", "needs both server_secret_file and clients_dir");
        }
    }
    char fallback[600];
    snprintf(fallback, sizeof fallback, "ipc://%s/admin.sock", self->run_dir);
    self->admin_zmq = s_string_or(admin, "zmq", fallback, problems, "engine.admin.zmq");
    snprintf(fallback, sizeof fallback, "ipc://%s/events.sock", self->run_dir);
    self->admin_events = s_string_or(admin, "events", fallback, problems, "engine.admin.events");
    self->admin_http = s_string_or(admin, "http", "127.0.0.1:8080", problems, "engine.admin.http");
    self->http_token_file = s_string_or(admin, "http_token_file", NULL, problems, "engine.admin.http_token_file");
    json_t *insecure = json_object_get(admin, "insecure");
    if (insecure && !json_is_boolean(insecure)) {
        drv_problems_add(problems, "engine.admin.insecure", "must be true or false");
    }
    self->admin_insecure = json_is_true(insecure);
    //  czmq's zauth reads "*" as "any client key": that is no authentication.
    if (self->curve_clients_dir && !strcmp(self->curve_clients_dir, "*") && !self->admin_insecure) {
        drv_problems_add(problems, "engine.admin.curve.clients_dir",
                         "\"*\" lets any client key in; name a directory of client certificates, or set "
                         "insecure: true");
    }

    //  Refuse to expose the control plane unauthenticated unless told to.
    const char *endpoints[2] = {self->admin_zmq, self->admin_events};
    const char *paths[2] = {"engine.admin.zmq", "engine.admin.events"};
    for (int i = 0; i < 2; i++) {
        if (strncmp(endpoints[i], "tcp://", 6) == 0 && !self->admin_insecure && !curve) {
            drv_problems_add(problems, paths[i],
                             "tcp:// admin endpoint without CURVE keys; use ipc:// or set "
                             "insecure: true");
        } else if (strncmp(endpoints[i], "tcp://", 6) && strncmp(endpoints[i], "ipc://", 6)) {
            drv_problems_add(problems, paths[i], "endpoint \"%s\" must be ipc:// or tcp://", endpoints[i]);
        }
    }
    char http_host[256];
    int http_port;
    if (self->admin_http[0] && drv_config_hostport(self->admin_http, http_host, sizeof http_host, &http_port) != 0) {
        drv_problems_add(problems, "engine.admin.http",
                         "\"%s\" must be host:port (an IP address or localhost, port 1-65535), or \"\" to disable",
                         self->admin_http);
    } else if (self->admin_http[0] && !s_loopback(self->admin_http) && !self->http_token_file &&
               !self->admin_insecure) {
        drv_problems_add(problems, "engine.admin.http",
                         "non-loopback HTTP %s without http_token_file; set a token or "
                         "insecure: true",
                         self->admin_http);
    }
}

static void s_groups(drv_config_t *self, json_t *groups, const drv_cpus_t *cpus, drv_problems_t *problems)
{
    self->groups = json_object();
    if (groups && !json_is_object(groups)) {
        drv_problems_add(problems, "groups", "must be a map of group name to group");
        return;
    }
    json_t *endpoints = json_object(); // endpoint -> "groups.g.pipelines.p.nodes.n"
    size_t pipeline_count = 0;
    const char *group_name;
    json_t *group;
    json_object_foreach(groups, group_name, group)
    {
        char path[300];
        snprintf(path, sizeof path, "groups.%s", group_name);
        if (!drv_spec_valid_id(group_name)) {
            drv_problems_add(problems, path, "group name must match [a-z0-9_-]{1,63}");
        }
        if (group && !json_is_object(group) && !json_is_null(group)) {
            drv_problems_add(problems, path, "must be a map with pipelines");
            continue;
        }
        drv_problems_unknown_keys(problems, group, "pipelines", path);
        json_t *pipelines = json_object_get(group, "pipelines");
        json_t *out = json_object();
        json_object_set_new(self->groups, group_name, out);
        if (pipelines && !json_is_object(pipelines) && !json_is_null(pipelines)) {
            snprintf(path, sizeof path, "groups.%s.pipelines", group_name);
            drv_problems_add(problems, path, "must be a map of pipeline name to PipelineSpec");
            continue;
        }
        const char *name;
        json_t *spec;
        json_object_foreach(pipelines, name, spec)
        {
            snprintf(path, sizeof path, "groups.%s.pipelines.%s", group_name, name);
            if (++pipeline_count == (size_t)self->max_pipelines + 1) {
                drv_problems_add(problems, path, "more than %d pipelines (engine.limits.max_pipelines)",
                                 self->max_pipelines);
            }
            if (!drv_spec_valid_id(name)) {
                drv_problems_add(problems, path, "pipeline name must match [a-z0-9_-]{1,63}");
            }
            drv_spec_env_t env = drv_config_spec_env(self, cpus);
            json_t *normalized = drv_spec_normalize(spec, &env, path, problems);
            if (!normalized) {
                continue;
            }
            json_t *receivers = drv_spec_receivers(normalized, NULL);
            size_t index;
            json_t *receiver;
            json_array_foreach(receivers, index, receiver)
            {
                const char *endpoint = json_string_value(json_object_get(receiver, "endpoint"));
                char node_path[400];
                snprintf(node_path, sizeof node_path, "%s.nodes.%s.config.%s", path,
                         json_string_value(json_object_get(receiver, "node")),
                         json_string_value(json_object_get(receiver, "key")));
                json_t *owner = json_object_get(endpoints, endpoint);
                if (owner) {
                    drv_problems_add(problems, node_path, "endpoint %s is already bound by %s", endpoint,
                                     json_string_value(owner));
                } else {
                    json_object_set_new(endpoints, endpoint, json_string(node_path));
                }
            }
            json_decref(receivers);
            json_object_set_new(out, name, normalized);
        }
    }
    json_decref(endpoints);
}

drv_config_t *drv_config_parse(const char *text, size_t size, const char *path, const drv_cpus_t *cpus, char *err,
                               size_t errlen)
{
    char why[400] = "";
    json_t *lines = NULL;
    json_t *doc = drv_yaml_parse(text, size, &lines, why, sizeof why);
    if (!doc) {
        snprintf(err, errlen, "%s: %s", path, why);
        return NULL;
    }
    drv_config_t *self = calloc(1, sizeof *self);
    self->path = strdup(path);
    drv_problems_t *problems = drv_problems_new();
    if (!json_is_object(doc)) {
        drv_problems_add(problems, "", "the file must be a map with engine and groups");
    } else {
        drv_problems_unknown_keys(problems, doc, "engine groups", "");
        drv_config_env_expand(doc, problems);
        s_engine(self, json_object_get(doc, "engine"), problems);
        s_groups(self, json_object_get(doc, "groups"), cpus, problems);
    }
    size_t count = drv_problems_count(problems);
    if (count > 0) {
        const char *field = drv_problems_path(problems, 0);
        if (field[0] == '.') {
            field++;
        }
        int line = drv_yaml_line_of(lines, field);
        char more[64] = "";
        if (count > 1) {
            snprintf(more, sizeof more, " (and %zu more problem%s)", count - 1, count > 2 ? "s" : "");
        }
        snprintf(err, errlen, "%s:%d: %s: %s%s", path, line, field[0] ? field : "(document)",
                 drv_problems_message(problems, 0), more);
        drv_config_destroy(&self);
    }
    drv_problems_destroy(&problems);
    json_decref(doc);
    json_decref(lines);
    return self;
}

json_t *drv_config_groups_parse(const drv_config_t *config, const char *text, size_t size, const drv_cpus_t *cpus,
                                drv_problems_t *problems)
{
    char why[400] = "";
    json_t *doc = drv_yaml_parse(text, size, NULL, why, sizeof why);
    if (!doc || !json_is_object(doc) || !json_object_get(doc, "groups")) {
        drv_problems_add(problems, "", "%s", doc ? "must be a map with groups: (as in the config file)" : why);
        json_decref(doc);
        return NULL;
    }
    //  Only groups: engine settings are the local file's, and a key nobody
    //  reads (a typo) fails the whole document rather than being ignored.
    size_t before = drv_problems_count(problems);
    if (json_object_get(doc, "engine")) {
        drv_problems_add(problems, "engine",
                         "engine settings are not taken from here, only groups: "
                         "they stay the local config file's");
        json_object_del(doc, "engine");
    }
    drv_problems_unknown_keys(problems, doc, "groups", "");
    drv_config_t judged = *config; // the running engine's settings, its groups left alone
    judged.groups = NULL;
    judged.remote = true;
    s_groups(&judged, json_object_get(doc, "groups"), cpus, problems);
    json_decref(doc);
    if (drv_problems_count(problems) > before) {
        json_decref(judged.groups);
        return NULL;
    }
    return judged.groups;
}

drv_config_t *drv_config_load(const char *path, const drv_cpus_t *cpus, char *err, size_t errlen)
{
    size_t size;
    char *text = drv_file_read(path, DRV_CONFIG_MAX_BYTES, &size, err, errlen);
    drv_config_t *self = text ? drv_config_parse(text, size, path, cpus, err, errlen) : NULL;
    free(text);
    return self;
}

void drv_config_destroy(drv_config_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_config_t *self = *self_p;
    free(self->path);
    free(self->run_dir);
    free(self->admin_zmq);
    free(self->admin_events);
    free(self->admin_http);
    free(self->http_token_file);
    free(self->curve_server_secret_file);
    free(self->state_file);
    free(self->buffer_dir);
    json_decref(self->opamp);
    json_decref(self->telemetry);
    json_decref(self->kubernetes);
    free(self->curve_clients_dir);
    for (size_t i = 0; i < self->data_dir_count; i++) {
        free(self->data_dirs[i]);
    }
    free(self->data_dirs);
    for (size_t i = 0; i < self->opamp_env_count; i++) {
        free(self->opamp_env[i]);
    }
    free(self->opamp_env);
    for (size_t i = 0; i < self->http_host_count; i++) {
        free(self->http_hosts[i]);
    }
    free(self->http_hosts);
    json_decref(self->groups);
    free(self);
    *self_p = NULL;
}
