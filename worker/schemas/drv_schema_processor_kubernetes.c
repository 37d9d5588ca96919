/*  processor:kubernetes's schema (worker/nodes/drv_processor_kubernetes.c
    is its code; docs/kubernetes.md says what it does). */
#include "drv_schemas.h"

#include "drover/drv_kube_config.h"
#include "drover/drv_node_schema.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdio.h>
#include <string.h>

const char *const drv_kubernetes_metadata[] = {
    "k8s.namespace.name", "k8s.pod.name",        "k8s.pod.uid",          "k8s.pod.ip",           "k8s.pod.start_time",
    "k8s.node.name",      "k8s.deployment.name", "k8s.replicaset.name",  "k8s.statefulset.name", "k8s.daemonset.name",
    "k8s.job.name",       "k8s.cronjob.name",    "container.image.name", "container.image.tag",  NULL};

static bool s_known(const char *name)
{
    for (int i = 0; drv_kubernetes_metadata[i]; i++) {
        if (!strcmp(drv_kubernetes_metadata[i], name)) {
            return true;
        }
    }
    return false;
}

static void s_check_api(drv_spec_check_t *check, const char *node_path, const json_t *api)
{
    char at[512];
    snprintf(at, sizeof at, "%s.config.api", node_path);
    if (api && !json_is_object(api)) {
        drv_spec_check_problem(check, at, "must be a map: {server: in_cluster} or {server: URL, token_file, ca_file}");
        return;
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)api, key, value)
    {
        snprintf(at, sizeof at, "%s.config.api.%s", node_path, key);
        const char *problem = drv_kube_api_problem(key, value);
        if (problem) {
            drv_spec_check_problem(check, at, "%s", problem);
        }
    }
}

static void s_check_associate(drv_spec_check_t *check, const char *node_path, const json_t *associate)
{
    char at[512];
    snprintf(at, sizeof at, "%s.config.associate", node_path);
    if (associate && (!json_is_array(associate) || json_array_size(associate) == 0)) {
        drv_spec_check_problem(check, at, "must be a non-empty list of {from: resource, attribute: k8s.pod.uid}");
        return;
    }
    size_t i;
    json_t *rule;
    json_array_foreach(associate, i, rule)
    {
        snprintf(at, sizeof at, "%s.config.associate[%zu]", node_path, i);
        const char *from = json_string_value(json_object_get(rule, "from"));
        const char *attribute = json_string_value(json_object_get(rule, "attribute"));
        if (from && !strcmp(from, "connection")) {
            if (json_object_size(rule) != 1) {
                drv_spec_check_problem(check, at, "from: connection takes nothing else");
            }
        } else if (!from || strcmp(from, "resource")) {
            drv_spec_check_problem(check, at,
                                   "from must be resource (a resource attribute) or connection (the sender's address)");
        } else if (!attribute || (strcmp(attribute, "k8s.pod.uid") && strcmp(attribute, "k8s.pod.ip"))) {
            drv_spec_check_problem(check, at, "attribute must be k8s.pod.uid or k8s.pod.ip");
        } else if (json_object_size(rule) != 2) {
            drv_spec_check_problem(check, at, "takes from and attribute only");
        }
    }
}

//  labels / annotations: [{key: K, attribute: A} | {key_regex: R}]
static void s_check_tags(drv_spec_check_t *check, const char *node_path, const char *what, const json_t *list)
{
    char at[512];
    size_t i;
    json_t *rule;
    snprintf(at, sizeof at, "%s.config.extract.%s", node_path, what);
    if (list && !json_is_array(list)) {
        drv_spec_check_problem(check, at, "must be a list of {key: K, attribute: A} or {key_regex: R}");
        return;
    }
    json_array_foreach(list, i, rule)
    {
        snprintf(at, sizeof at, "%s.config.extract.%s[%zu]", node_path, what, i);
        const json_t *key = json_object_get(rule, "key"), *regex = json_object_get(rule, "key_regex");
        const json_t *attribute = json_object_get(rule, "attribute");
        if (!json_is_object(rule) || !!key == !!regex || (key && !json_is_string(key)) ||
            (regex && !json_is_string(regex)) || (attribute && !json_is_string(attribute)) ||
            json_object_size(rule) != 1u + (attribute != NULL)) {
            drv_spec_check_problem(check, at, "must be {key: K} or {key_regex: R}, with attribute: A if wanted");
            continue;
        }
        if (regex && attribute) { // every key it matches would get the one name
            drv_spec_check_problem(check, at, "attribute only with key: a key_regex's keys keep their own names");
            continue;
        }
        if (regex) {
            int code;
            PCRE2_SIZE offset;
            pcre2_code *re = pcre2_compile((PCRE2_SPTR)json_string_value(regex), PCRE2_ZERO_TERMINATED, PCRE2_UTF,
                                           &code, &offset, NULL);
            if (!re) {
                PCRE2_UCHAR why[200];
                pcre2_get_error_message(code, why, sizeof why);
                drv_spec_check_problem(check, at, "key_regex does not compile at offset %zu: %s", (size_t)offset,
                                       (const char *)why);
            }
            pcre2_code_free(re);
        }
    }
}

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    s_check_api(check, node_path, json_object_get(config, "api"));
    s_check_associate(check, node_path, json_object_get(config, "associate"));
    const json_t *node = json_object_get(config, "node");
    char at[512];
    if (node && !json_is_string(node)) {
        snprintf(at, sizeof at, "%s.config.node", node_path);
        drv_spec_check_problem(check, at, "must be a node's name, or \"\" for every node's pods");
    }
    const json_t *extract = json_object_get(config, "extract");
    if (extract && !json_is_object(extract)) {
        snprintf(at, sizeof at, "%s.config.extract", node_path);
        drv_spec_check_problem(check, at, "must be a map: metadata, labels, annotations");
        return;
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)extract, key, value)
    {
        snprintf(at, sizeof at, "%s.config.extract.%s", node_path, key);
        if (!strcmp(key, "labels") || !strcmp(key, "annotations")) {
            s_check_tags(check, node_path, key, value);
        } else if (strcmp(key, "metadata")) {
            drv_spec_check_problem(check, at, "unknown key (metadata, labels, annotations)");
        } else if (!json_is_array(value)) {
            drv_spec_check_problem(check, at, "must be a list of attribute names");
        } else {
            size_t i;
            json_t *name;
            json_array_foreach(value, i, name)
            {
                if (!json_is_string(name) || !s_known(json_string_value(name))) {
                    snprintf(at, sizeof at, "%s.config.extract.metadata[%zu]", node_path, i);
                    drv_spec_check_problem(check, at,
                                           "unknown attribute (k8s.namespace.name, k8s.pod.name, "
                                           "k8s.deployment.name, container.image.name, ... see "
                                           "docs/nodes.md)");
                }
            }
        }
    }
}

const drv_node_schema_t drv_schema_processor_kubernetes = {
    .name = "processor:kubernetes",
    .role = DRV_ROLE_PROCESSOR,
    .doc = "Adds what the Kubernetes API knows of a record's pod to its resource, as the OpenTelemetry "
           "Collector's k8sattributes processor does: namespace, pod, node, owners (Deployment through its "
           "ReplicaSet, CronJob through its Job, StatefulSet, DaemonSet), container image, labels and "
           "annotations. Pods are listed and watched in a thread of their own (bookmarks; a 410 lists again; "
           "errors back off) and cached; a record is never held for the API: one whose pod is not known yet "
           "passes as it is, counted in unmatched (docs/kubernetes.md).",
    .example = "{type: processor:kubernetes, config: {api: {server: in_cluster}, node: \"${env:NODE_NAME}\", "
               "extract: {labels: [{key: app.kubernetes.io/name, attribute: app}]}}, to: [out]}",
    .keys =
        {{.key = "api",
          .kind = DRV_KEY_OBJECT,
          .fallback = "{\"server\": \"in_cluster\"}",
          .doc = "the API server: {server: in_cluster} (the pod's service account token and CA), or "
                 "{server: URL, token_file: /path, ca_file: /path}; the token file is read again for every "
                 "connection (a rotated token is used at once)"},
         {.key = "node",
          .kind = DRV_KEY_ANY,
          .fallback = "\"\"",
          .doc = "only this node's pods are watched (a DaemonSet: \"${env:NODE_NAME}\"); \"\": every pod "
                 "of the cluster (a gateway)"},
         {.key = "associate",
          .kind = DRV_KEY_ANY,
          .fallback = "[{\"from\": \"resource\", \"attribute\": \"k8s.pod.uid\"}, {\"from\": \"resource\", "
                      "\"attribute\": \"k8s.pod.ip\"}, {\"from\": \"connection\"}]",
          .doc =
              "how a record finds its pod, tried in order: a resource attribute holding the pod's uid "
              "(receiver:file with kubernetes: true sets it) or its IP, or the connection it came on "
              "(OTLP over HTTP or gRPC, HTTP, syslog: the sender's address, which the receiver then puts in resource "
              "client.address)"},
         {.key = "extract",
          .kind = DRV_KEY_OBJECT,
          .fallback = "{}",
          .doc = "metadata: the attributes added (default: all of k8s.namespace.name, k8s.pod.name, "
                 "k8s.pod.uid, k8s.pod.ip, k8s.pod.start_time, k8s.node.name, the owners' k8s.*.name, "
                 "container.image.name, container.image.tag); labels, annotations: [{key: K | key_regex: "
                 "R}] added as k8s.pod.labels.<key> / k8s.pod.annotations.<key>, or under attribute: A "
                 "(with key only)"},
         {.key = "deleted_grace_secs",
          .kind = DRV_KEY_NONNEG_INT,
          .fallback = "60",
          .maximum = 86400,
          .doc = "a deleted pod's metadata is kept this long (its last log lines still find it)"},
         {.key = "wait_for_metadata_secs",
          .kind = DRV_KEY_NONNEG_INT,
          .fallback = "10",
          .maximum = 600,
          .doc = "at start, the pipeline pushes back this long at most until the first list of pods came "
                 "(the instance is ready once it did), so that a node agent's backlog gets its metadata; 0: "
                 "never wait"},
         {.key = "max_pods",
          .kind = DRV_KEY_NONNEG_INT,
          .fallback = "20000",
          .maximum = 10000000,
          .doc = "the cache's bound: pods past it are not cached (said in the log, counted)"}},
    .check = s_check,
};
