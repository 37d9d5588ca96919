/*  drv_kube — a Kubernetes API client over libcurl and jansson
    (docs/kubernetes.md): where the API server is and how to authenticate
    (in-cluster: the service account's token and CA; else a URL with a
    token file and a CA file), one-off requests, and watches that keep a
    collection of objects current in a thread of their own (list, then
    watch from its resourceVersion with bookmarks; a 410 lists again;
    errors back off). The token file is read again for every connection,
    so a rotated token is used as soon as the kubelet writes it. */
#ifndef DRV_KUBE_H
#define DRV_KUBE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct drv_kube_t drv_kube_t;

typedef struct {
    const char *server;     // "in_cluster", or an http(s) URL
    const char *token_file; // a bearer token, read trimmed of a trailing newline (NULL: none)
    const char *ca_file;    // the CA bundle the server's certificate is checked against (NULL: the system's)
} drv_kube_config_t;

//  The client of config, or NULL with the reason in err (in_cluster
//  outside a cluster: no KUBERNETES_SERVICE_HOST).
drv_kube_t *drv_kube_new(const drv_kube_config_t *config, char *err, size_t errlen);
void drv_kube_destroy(drv_kube_t **self_p);
const char *drv_kube_server(const drv_kube_t *self);

//  A GET of path ("/api/v1/pods?limit=1"): its HTTP status (0: no answer,
//  the reason in err) and *body the JSON answer (NULL when none).
int drv_kube_get(drv_kube_t *self, const char *path, json_t **body, char *err, size_t errlen);
//  The same with another method and a JSON body sent as content_type
//  ("application/merge-patch+json" for a PATCH, "application/json"); body
//  NULL sends none.
int drv_kube_request(drv_kube_t *self, const char *method, const char *path, const char *content_type,
                     const json_t *body, json_t **answer, char *err, size_t errlen);

//  ----------------------------------------------------------------- watches

typedef enum {
    DRV_KUBE_LISTED,   // a list begins: every object follows as ADDED, then SYNCED
    DRV_KUBE_SYNCED,   // the list ended: objects not named since LISTED are gone
    DRV_KUBE_ADDED,    // object: the whole object
    DRV_KUBE_MODIFIED, // object: the whole object
    DRV_KUBE_DELETED,  // object: its last state
} drv_kube_event_t;

//  Called in the watch's thread, one event at a time; object is borrowed.
typedef void(drv_kube_event_fn)(void *arg, drv_kube_event_t event, const json_t *object);

typedef struct drv_kube_watch_t drv_kube_watch_t;

typedef struct {
    const char *state;    // "listing", "watching", "backing_off"
    int64_t relists;      // lists after the first (a 410, a broken watch)
    int64_t events;       // events applied
    int64_t errors;       // failed requests
    char last_error[200]; // why the last one failed ("" when none did)
} drv_kube_watch_stats_t;

//  Starts keeping the collection at path ("/api/v1/pods") current, only
//  what field_selector ("spec.nodeName=n1") and label_selector ("app=shop")
//  select (NULL or "": all), calling fn. The client must outlive the watch.
drv_kube_watch_t *drv_kube_watch_start(drv_kube_t *kube, const char *path, const char *field_selector,
                                       const char *label_selector, drv_kube_event_fn *fn, void *arg);
//  Stops it (within a second) and waits for its thread.
void drv_kube_watch_stop(drv_kube_watch_t **self_p);
void drv_kube_watch_stats(drv_kube_watch_t *self, drv_kube_watch_stats_t *out);

#endif
