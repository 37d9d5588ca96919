/*  drv_config_kubernetes — engine.kubernetes (docs/kubernetes.md,
    "Pipelines as Kubernetes resources"): the API server droverd watches
    DroverPipeline resources on, and which, checked when the file is read
    with its defaults filled in; and the api maps' check
    (drover/drv_kube_config.h). */
#include "drv_config_internal.h"

#include "drover/drv_kube_config.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

const char *drv_kube_api_problem(const char *key, const json_t *value)
{
    bool file = !strcmp(key, "token_file") || !strcmp(key, "ca_file");
    const char *text = json_string_value(value);
    if (strcmp(key, "server") && !file) {
        return "unknown key (server, token_file, ca_file)";
    }
    if (!text || !*text) {
        return "must be a non-empty string";
    }
    if (file && text[0] != '/') {
        return "must be an absolute path";
    }
    if (!file && strcmp(text, "in_cluster") && strncmp(text, "http://", 7) && strncmp(text, "https://", 8)) {
        return "must be in_cluster or an http:// or https:// URL";
    }
    return NULL;
}

//  A namespace's name: a DNS label (RFC 1123), as the API server checks it.
static bool s_dns_label(const char *text)
{
    size_t len = strlen(text);
    return len >= 1 && len <= 63 && strspn(text, "abcdefghijklmnopqrstuvwxyz0123456789-") == len && text[0] != '-' &&
           text[len - 1] != '-';
}

json_t *drv_config_kubernetes(json_t *kubernetes, drv_problems_t *problems)
{
    if (!kubernetes || json_is_null(kubernetes)) {
        return NULL;
    }
    if (!json_is_object(kubernetes)) {
        drv_problems_add(problems, "engine.kubernetes",
                         "must be a map: {api: {server: in_cluster}, watch: {namespace, label_selector}}");
        return NULL;
    }
    drv_problems_unknown_keys(problems, kubernetes, "api watch", "engine.kubernetes");
    json_t *api = json_object_get(kubernetes, "api");
    json_t *watch = json_object_get(kubernetes, "watch");
    if (api && !json_is_object(api)) {
        drv_problems_add(problems, "engine.kubernetes.api",
                         "must be a map: {server: in_cluster} or {server: URL, token_file, ca_file}");
        api = NULL;
    }
    const char *key;
    json_t *value;
    json_object_foreach(api, key, value)
    {
        const char *problem = drv_kube_api_problem(key, value);
        if (problem) {
            drv_problems_add(problems, "engine.kubernetes.api", "%s: %s", key, problem);
        }
    }
    if (watch && !json_is_object(watch)) {
        drv_problems_add(problems, "engine.kubernetes.watch", "must be a map: {namespace, label_selector}");
        watch = NULL;
    }
    drv_problems_unknown_keys(problems, watch, "namespace label_selector", "engine.kubernetes.watch");
    json_t *namespace = json_object_get(watch, "namespace");
    if (namespace && (!json_is_string(namespace) || !s_dns_label(json_string_value(namespace)))) {
        drv_problems_add(problems, "engine.kubernetes.watch.namespace",
                         "must be a namespace's name (lowercase letters, digits and -, at most 63)");
    }
    json_t *selector = json_object_get(watch, "label_selector");
    if (selector && (!json_is_string(selector) || strlen(json_string_value(selector)) > 1024 ||
                     strpbrk(json_string_value(selector), "\r\n&#"))) {
        drv_problems_add(problems, "engine.kubernetes.watch.label_selector",
                         "must be a label selector on one line, e.g. \"drover.dev/engine=node-agent\"");
    }
    json_t *normal = json_pack("{s:{s:s}, s:{s:s, s:s}}", "api", "server", "in_cluster", "watch", "namespace",
                               json_is_string(namespace) ? json_string_value(namespace) : "", "label_selector",
                               json_is_string(selector) ? json_string_value(selector) : "");
    json_object_update(json_object_get(normal, "api"), api ? api : json_object_get(normal, "api"));
    return normal;
}
