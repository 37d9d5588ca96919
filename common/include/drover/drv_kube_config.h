/*  drv_kube_config — how a config names the Kubernetes API server: an
    `api` map ({server: in_cluster} or {server: URL, token_file, ca_file};
    docs/kubernetes.md), checked alike wherever one appears
    (processor:kubernetes, engine.kubernetes). */
#ifndef DRV_KUBE_CONFIG_H
#define DRV_KUBE_CONFIG_H

#include <jansson.h>

//  What is wrong with key: value of an api map, or NULL when nothing is.
const char *drv_kube_api_problem(const char *key, const json_t *value);

#endif
