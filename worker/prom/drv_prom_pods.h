/*  drv_prom_pods — targets found through the Kubernetes API for
    receiver:prometheus's kubernetes_pods (docs/operations.md, "Scraping
    Prometheus targets"): this node's running pods annotated
    prometheus.io/scrape "true", watched in a thread of their own. */
#ifndef DRV_PROM_PODS_H
#define DRV_PROM_PODS_H

#include <jansson.h>
#include <stdint.h>

typedef struct drv_prom_pods_t drv_prom_pods_t;

//  Watches the pods config says ({api: {server, token_file, ca_file},
//  node}: only that node's when node is given). NULL with err when the
//  API's address cannot be made (in_cluster outside a pod).
drv_prom_pods_t *drv_prom_pods_start(const json_t *config, char *err, size_t errlen);
void drv_prom_pods_stop(drv_prom_pods_t **self_p);
//  The targets now, [{url, namespace, pod}] (new reference), and the
//  version of that list.
json_t *drv_prom_pods_targets(drv_prom_pods_t *self, int64_t *version);
//  The version of the list: a new one when a target came or went.
int64_t drv_prom_pods_version(drv_prom_pods_t *self);

#endif
