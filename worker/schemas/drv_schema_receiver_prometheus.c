/*  receiver:prometheus's schema (worker/nodes/drv_receiver_prometheus.c is its code). */
#include "drv_schemas.h"

#include "drover/drv_kube_config.h"
#include "drover/drv_node_schema.h"

#include <string.h>

//  kubernetes_pods: {api: {server, token_file, ca_file}, node, job, annotations: true}.
static void s_check_pods(drv_spec_check_t *check, const char *node_path, const json_t *pods)
{
    if (!pods) {
        return;
    }
    if (!json_is_object(pods)) {
        drv_spec_check_problem(check, node_path, "config.kubernetes_pods: must be a map {api, node, job, annotations}");
        return;
    }
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)pods, key, value)
    {
        if (!strcmp(key, "api") && json_is_object(value)) {
            const char *api_key;
            const json_t *api_value;
            json_object_foreach((json_t *)value, api_key, api_value)
            {
                const char *problem = drv_kube_api_problem(api_key, api_value);
                if (problem) {
                    drv_spec_check_problem(check, node_path, "config.kubernetes_pods.api.%s: %s", api_key, problem);
                }
            }
        } else if ((!strcmp(key, "node") || !strcmp(key, "job")) && json_is_string(value)) {
            continue;
        } else if (!strcmp(key, "annotations") && json_is_true(value)) {
            continue; // the prometheus.io/ annotations: the only discovery there is
        } else {
            drv_spec_check_problem(check, node_path,
                                   "config.kubernetes_pods.%s: unknown or wrong (api: a map, node and job: strings, "
                                   "annotations: true)",
                                   key);
        }
    }
}

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    char at[512];
    const json_t *targets = json_object_get(config, "targets");
    const json_t *pods = json_object_get(config, "kubernetes_pods");
    s_check_pods(check, node_path, pods);
    if ((targets && !json_is_array(targets)) || json_array_size(targets) > 1000 ||
        (json_array_size(targets) == 0 && !pods)) {
        drv_spec_check_problem(check, node_path,
                               "config.targets: must be a list of 1 to 1000 {url, job, labels} (or kubernetes_pods)");
        return;
    }
    size_t i;
    const json_t *target;
    json_array_foreach(targets, i, target)
    {
        snprintf(at, sizeof at, "%s.config.targets[%zu]", node_path, i);
        const char *url = json_string_value(json_object_get(target, "url"));
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)target, key, value)
        {
            if (strcmp(key, "url") && strcmp(key, "job") && strcmp(key, "labels")) {
                drv_spec_check_problem(check, at, "unknown key \"%s\" (url, job, labels)", key);
            }
        }
        if (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) || strlen(url) > 2048 ||
            strpbrk(url, " \t\r\n")) {
            drv_spec_check_problem(check, at, "url: must be the target's http:// or https:// URL (its /metrics)");
        }
        const json_t *job = json_object_get(target, "job");
        if (job && (!json_is_string(job) || !json_string_value(job)[0])) {
            drv_spec_check_problem(check, at, "job: must be a non-empty string");
        }
        const json_t *labels = json_object_get(target, "labels");
        if (labels && !json_is_object(labels)) {
            drv_spec_check_problem(check, at, "labels: must be a map of label names to strings");
        }
        json_object_foreach((json_t *)labels, key, value)
        {
            bool name = key[0] &&
                        strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789") == strlen(key) &&
                        !(key[0] >= '0' && key[0] <= '9');
            if (!name || !json_is_string(value)) {
                drv_spec_check_problem(check, at,
                                       "labels.%s: must be a label name ([a-zA-Z_][a-zA-Z0-9_]*) and a string", key);
            }
        }
    }
    json_int_t interval = json_integer_value(json_object_get(config, "interval_secs"));
    json_int_t timeout = json_integer_value(json_object_get(config, "timeout_secs"));
    if (json_object_get(config, "interval_secs") && interval < 1) {
        drv_spec_check_problem(check, node_path, "config.interval_secs: must be at least 1");
    }
    if (json_object_get(config, "timeout_secs") && (timeout < 1 || (interval > 0 && timeout > interval))) {
        drv_spec_check_problem(check, node_path, "config.timeout_secs: must be from 1 to interval_secs");
    }
}

const drv_node_schema_t drv_schema_receiver_prometheus = {
    .name = "receiver:prometheus",
    .role = DRV_ROLE_RECEIVER,
    .doc = "Scrapes Prometheus targets every interval: OpenMetrics 1.0 or the text format 0.0.4 (content "
           "negotiation); counters become cumulative monotonic sums, gauges gauges, histograms explicit-bucket "
           "histograms, summaries summaries, keeping their Prometheus names; job and instance become the "
           "resource's service.name and service.instance.id, the target's labels go on every point; up and "
           "scrape_duration_seconds per target. A scrape over max_body_bytes or sample_limit, refused, timed out "
           "or unparsable fails whole (up 0). docs/operations.md, \"Scraping Prometheus targets\".",
    .example = "{type: receiver:prometheus, config: {targets: [{url: \"http://127.0.0.1:9100/metrics\", job: node}]}, "
               "to: [out]}",
    .details = "A scrape's samples become metric records as OpenTelemetry's Prometheus compatibility specification"
               " maps them:\n"
               "\n"
               "| Prometheus | record |\n"
               "| --- | --- |\n"
               "| a counter's sample | `type: sum`, cumulative, monotonic; the sample's name kept"
               " (`node_cpu_seconds_total` stays that) |\n"
               "| a gauge, an untyped sample, info, stateset | `type: gauge`, the sample's name |\n"
               "| a histogram's `_bucket{le}`, `_sum`, `_count` | one `histogram` point per label set:"
               " `explicit_bounds` the finite `le`s, `bucket_counts` no longer cumulative (the last one up to"
               " `_count`), `count`, `sum`; the family's name |\n"
               "| a summary's `{quantile}`, `_sum`, `_count` | one `summary` point: `quantile_values`, `count`,"
               " `sum` |\n"
               "| `# HELP`, `# UNIT` | `description`, `unit` |\n"
               "| the sample's labels | attributes; the target's `labels` too (they win, as Prometheus' target"
               " labels do) |\n"
               "| `job`, `instance` (the URL's host:port) | the resource's `service.name`, `service.instance.id` |\n"
               "| the sample's timestamp | `time_unix_nano` (else the scrape's time) |\n"
               "\n"
               "After each scrape the target's `up` (1, or 0 when it failed) and `scrape_duration_seconds` gauges"
               " follow.\n",
    .keys = {{.key = "targets",
              .kind = DRV_KEY_ANY,
              .fallback = "[]",
              .doc = "[{url, job, labels}]: each target's /metrics URL, its job (default: the node's id) and labels "
                     "put on every point"},
             {.key = "kubernetes_pods",
              .kind = DRV_KEY_ANY,
              .doc = "{api: {server: in_cluster}, node: \"${env:NODE_NAME}\", job, annotations: true}: also the pods "
                     "of the node annotated prometheus.io/scrape \"true\" (port, path, scheme from prometheus.io/port, "
                     "/path, /scheme), found through the Kubernetes API; job kubernetes-pods, labels namespace, pod"},
             {.key = "interval_secs",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "30",
              .maximum = 86400,
              .doc = "seconds between scrapes of each target"},
             {.key = "timeout_secs",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "10",
              .maximum = 86400,
              .doc = "how long a scrape may take (at most interval_secs)"},
             {.key = "max_body_bytes",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "16777216",
              .maximum = 1073741824,
              .doc = "a larger answer fails the scrape"},
             {.key = "sample_limit",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "100000",
              .maximum = 100000000,
              .doc = "a scrape of more samples fails whole, as in Prometheus (0: no limit)"}},
    .check = s_check,
};
