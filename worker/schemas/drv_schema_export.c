/*  The batching exporters' shared keys (drv_schemas.h): exporter:http and
    exporter:otlp. Their rules, checked when a spec is validated so a wrong
    value is a 422 naming it, never an instance that fails later, and the
    defaults the normalized config shows. */
#include "drv_schemas.h"

#include "drover/drv_file.h"
#include "drover/drv_secret.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const drv_export_bound_t drv_export_batch_keys[] = {{"max_records", 1, 1000000, 512},
                                                    {"max_bytes", 1, 256LL << 20, 1048576},
                                                    {"max_delay_ms", 0, 60000, 200},
                                                    {NULL, 0, 0, 0}};
const drv_export_bound_t drv_export_retry_keys[] = {{"initial_ms", 1, 3600000, 100},
                                                    {"max_ms", 1, 3600000, 5000},
                                                    {"max_elapsed_secs", 0, 604800, 300},
                                                    {NULL, 0, 0, 0}};

//  The normalized config shows what an instance will use: batch and retry
//  with every key, tls with insecure_skip_verify (docs/nodes.md).
static void s_fill(json_t *config, const char *name, const drv_export_bound_t *keys)
{
    json_t *given = json_object_get(config, name);
    if (!json_is_object(given)) {
        return;
    }
    json_t *object = json_deep_copy(given); // the given one may be the caller's
    for (const drv_export_bound_t *bound = keys; bound->key; bound++) {
        if (!json_object_get(object, bound->key)) {
            json_object_set_new(object, bound->key, json_integer(bound->fallback));
        }
    }
    json_object_set_new(config, name, object);
}

void drv_export_complete(drv_spec_check_t *check, const char *node_path, json_t *normalized)
{
    (void)check;
    (void)node_path;
    s_fill(normalized, "batch", drv_export_batch_keys);
    s_fill(normalized, "retry", drv_export_retry_keys);
    json_t *tls = json_object_get(normalized, "tls");
    if (json_is_object(tls) && !json_object_get(tls, "insecure_skip_verify")) {
        tls = json_deep_copy(tls);
        json_object_set_new(tls, "insecure_skip_verify", json_false());
        json_object_set_new(normalized, "tls", tls);
    }
}

//  Every key of object is one of keys and an integer within its bounds.
static void s_check_integers(drv_spec_check_t *check, const char *node_path, const char *name, const json_t *object,
                             const drv_export_bound_t *keys)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)object, key, value)
    {
        const drv_export_bound_t *bound = keys;
        while (bound->key && strcmp(bound->key, key) != 0) {
            bound++;
        }
        if (!bound->key) {
            drv_spec_check_problem(check, node_path, "config.%s.%s: unknown key", name, key);
        } else if (!json_is_integer(value) || json_integer_value(value) < bound->minimum ||
                   json_integer_value(value) > bound->maximum) {
            drv_spec_check_problem(check, node_path, "config.%s.%s: must be an integer from %lld to %lld", name, key,
                                   (long long)bound->minimum, (long long)bound->maximum);
        }
    }
}

//  A CA bundle is read, never written: besides data_dirs it may be where
//  the system keeps them.
static bool s_ca_file_allowed(const drv_spec_check_t *check, const char *path)
{
    static const char *const system_dirs[] = {"/etc/ssl/", "/etc/pki/", "/usr/share/ca-certificates/",
                                              "/usr/local/share/ca-certificates/", NULL};
    if (drv_spec_check_path_allowed(check, path)) {
        return true;
    }
    if (strstr(path, "/../") || strstr(path, "/./")) {
        return false;
    }
    for (const char *const *dir = system_dirs; *dir; dir++) {
        if (!strncmp(path, *dir, strlen(*dir))) {
            return true;
        }
    }
    return false;
}

void drv_tls_check(drv_spec_check_t *check, const char *node_path, const json_t *tls)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)tls, key, value)
    {
        if (!strcmp(key, "ca_file")) {
            struct stat st;
            if (!json_is_string(value) || json_string_length(value) == 0 || json_string_value(value)[0] != '/') {
                drv_spec_check_problem(check, node_path, "config.tls.ca_file: must be an absolute path");
            } else if (!s_ca_file_allowed(check, json_string_value(value))) {
                drv_spec_check_problem(check, node_path,
                                       "config.tls.ca_file: %s is outside engine.data_dirs, run_dir and the "
                                       "system's certificate directories (/etc/ssl, /etc/pki, "
                                       "/usr/share/ca-certificates, /usr/local/share/ca-certificates)",
                                       json_string_value(value));
            } else if (stat(json_string_value(value), &st) == 0 && !S_ISREG(st.st_mode)) {
                drv_spec_check_problem(check, node_path, "config.tls.ca_file: %s is not a regular file",
                                       json_string_value(value));
            }
        } else if (!strcmp(key, "insecure_skip_verify")) {
            if (!json_is_boolean(value)) {
                drv_spec_check_problem(check, node_path, "config.tls.insecure_skip_verify: must be true or false");
            }
        } else {
            drv_spec_check_problem(check, node_path, "config.tls.%s: unknown key (ca_file, insecure_skip_verify)", key);
        }
    }
}

//  A header name is an RFC 9110 token; a value has no control character
//  but tab (a CR or LF would let a spec smuggle headers of its own).
static bool s_path_ok(const void *check, const char *path)
{
    return drv_spec_check_path_allowed(check, path);
}

static void s_check_headers(drv_spec_check_t *check, const char *node_path, const json_t *headers)
{
    const char *name;
    json_t *value;
    json_object_foreach((json_t *)headers, name, value)
    {
        bool token = name[0] != 0;
        for (const char *c = name; *c; c++) {
            token = token && (isalnum((unsigned char)*c) || strchr("!#$%&'*+-.^_`|~", *c));
        }
        if (!token) {
            drv_spec_check_problem(check, node_path, "config.headers: \"%s\" is not a header name", name);
            continue;
        }
        if (!strcasecmp(name, "Content-Type") || !strcasecmp(name, "Content-Encoding") ||
            !strcasecmp(name, "Content-Length") || !strcasecmp(name, "Host") || !strcasecmp(name, "Expect")) {
            drv_spec_check_problem(check, node_path, "config.headers.%s: set by the exporter itself", name);
            continue;
        }
        const char *text = json_string_value(value);
        char why[300];
        if (drv_secret_check(text, drv_spec_check_env_names(check), s_path_ok, check, why, sizeof why) != 0) {
            drv_spec_check_problem(check, node_path, "config.headers.%s: %s", name, why);
            continue;
        }
        for (const char *c = text ? text : ""; *c; c++) {
            if ((unsigned char)*c < 0x20 && *c != '\t') {
                drv_spec_check_problem(check, node_path, "config.headers.%s: control characters are not allowed", name);
                break;
            }
        }
    }
}

void drv_export_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    drv_queue_check(check, node_path, config);
    const char *endpoint = json_string_value(json_object_get(config, "endpoint"));
    if (endpoint && strncmp(endpoint, "http://", 7) != 0 && strncmp(endpoint, "https://", 8) != 0) {
        drv_spec_check_problem(check, node_path, "config.endpoint: must be an http:// or https:// URL");
    } else if (endpoint && (strlen(endpoint) > DRV_EXPORT_URL_MAX || strpbrk(endpoint, " \t\r\n"))) {
        drv_spec_check_problem(check, node_path, "config.endpoint: must be a URL of at most %d bytes, without spaces",
                               DRV_EXPORT_URL_MAX);
    }
    json_t *batch = json_object_get(config, "batch");
    s_check_integers(check, node_path, "batch", batch, drv_export_batch_keys);
    json_t *retry = json_object_get(config, "retry");
    s_check_integers(check, node_path, "retry", retry, drv_export_retry_keys);
    json_t *initial = json_object_get(retry, "initial_ms"), *max = json_object_get(retry, "max_ms");
    if (json_is_integer(initial) && json_is_integer(max) && json_integer_value(max) < json_integer_value(initial)) {
        drv_spec_check_problem(check, node_path, "config.retry.max_ms: must be at least initial_ms");
    }
    drv_tls_check(check, node_path, json_object_get(config, "tls"));
    s_check_headers(check, node_path, json_object_get(config, "headers"));
    json_t *timeout = json_object_get(config, "timeout_ms");
    if (timeout && json_integer_value(timeout) < 100) {
        drv_spec_check_problem(check, node_path, "config.timeout_ms: must be at least 100");
    }
}
