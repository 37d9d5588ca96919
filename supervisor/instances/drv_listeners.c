/*  drv_listeners — see drv_listeners.h. */
#include "drv_listeners.h"

#include "drover/drv_listen.h"
#include "drover/drv_log.h"

#include "drover/drv_problems.h"
#include "drover/drv_spec.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static drv_listener_t *s_find(drv_pipeline_t *pipeline, const char *endpoint)
{
    for (drv_listener_t *l = zlistx_first(pipeline->listeners); l; l = zlistx_next(pipeline->listeners)) {
        if (!strcmp(l->endpoint, endpoint)) {
            return l;
        }
    }
    return NULL;
}

//  Puts the receiver that names endpoint in front of why ("node in
//  (receiver:otlp) config.endpoint: 0.0.0.0:4318: bind: Address already in
//  use"): an operator looks for the node, not the socket.
static void s_name_node(const json_t *spec, const char *endpoint, char *why, size_t whylen)
{
    json_t *receivers = drv_spec_receivers(spec, NULL);
    size_t i;
    json_t *r;
    json_array_foreach(receivers, i, r)
    {
        if (!strcmp(json_string_value(json_object_get(r, "endpoint")) ?: "", endpoint)) {
            char named[600];
            snprintf(named, sizeof named, "node %s (%s) config.%s: %s", json_string_value(json_object_get(r, "node")),
                     json_string_value(json_object_get(r, "type")), json_string_value(json_object_get(r, "key")), why);
            snprintf(why, whylen, "%s", named);
            break;
        }
    }
    json_decref(receivers);
}

int drv_listeners_open(drv_pipeline_t *pipeline, const json_t *spec, char *why, size_t whylen)
{
    json_t *endpoints = drv_listen_endpoints(spec);
    size_t i;
    json_t *endpoint;
    int rc = 0;
    json_array_foreach(endpoints, i, endpoint)
    {
        const char *text = json_string_value(endpoint);
        if (rc != 0 || s_find(pipeline, text)) {
            continue;
        }
        int fd = drv_listen_bind(text, why, whylen);
        if (fd < 0) {
            s_name_node(spec, text, why, whylen);
            rc = -1;
            continue;
        }
        drv_listener_t *listener = calloc(1, sizeof *listener);
        snprintf(listener->endpoint, sizeof listener->endpoint, "%s", text);
        listener->fd = fd;
        zlistx_add_end(pipeline->listeners, listener);
        drv_info("listening pipeline=%s endpoint=%s", pipeline->key, text);
    }
    json_decref(endpoints);
    return rc;
}

void drv_listeners_probe(drv_pipeline_t *pipeline, const json_t *spec, drv_problems_t *problems)
{
    json_t *receivers = drv_spec_receivers(spec, NULL);
    size_t i;
    json_t *r;
    json_array_foreach(receivers, i, r)
    {
        const char *endpoint = json_string_value(json_object_get(r, "endpoint"));
        if (!endpoint || !strcmp(json_string_value(json_object_get(r, "type")), "receiver:zmq") ||
            (pipeline && s_find(pipeline, endpoint))) {
            continue; // zmq's are the broker's; one the pipeline holds is known good
        }
        char why[300];
        int fd = drv_listen_bind(endpoint, why, sizeof why);
        if (fd >= 0) {
            close(fd);
            continue;
        }
        char path[200];
        snprintf(path, sizeof path, "nodes.%s.config.%s", json_string_value(json_object_get(r, "node")),
                 json_string_value(json_object_get(r, "key")));
        drv_problems_add(problems, path, "%s", why);
    }
    json_decref(receivers);
}

static bool s_needs(const json_t *spec, const char *endpoint)
{
    json_t *endpoints = drv_listen_endpoints(spec);
    bool found = false;
    size_t i;
    json_t *e;
    json_array_foreach(endpoints, i, e)
    {
        found |= !strcmp(json_string_value(e), endpoint);
    }
    json_decref(endpoints);
    return found;
}

void drv_listeners_prune(drv_pipeline_t *pipeline)
{
    bool live = pipeline->running || pipeline->active;
    drv_listener_t *l = zlistx_first(pipeline->listeners);
    while (l) {
        bool needed = live && s_needs(pipeline->spec, l->endpoint);
        for (drv_instance_t *inst = zlistx_first(pipeline->instances); inst && !needed;
             inst = zlistx_next(pipeline->instances)) {
            needed = s_needs(inst->spec, l->endpoint);
        }
        if (needed) {
            l = zlistx_next(pipeline->listeners);
            continue;
        }
        drv_info("listening ended pipeline=%s endpoint=%s", pipeline->key, l->endpoint);
        zlistx_delete(pipeline->listeners, zlistx_cursor(pipeline->listeners));
        l = zlistx_first(pipeline->listeners); // the cursor is gone with it: start over
    }
}

size_t drv_listeners_fds(drv_pipeline_t *pipeline, const json_t *spec, int *fds, size_t max)
{
    size_t n = 0;
    for (drv_listener_t *l = zlistx_first(pipeline->listeners); l && n < max; l = zlistx_next(pipeline->listeners)) {
        if (s_needs(spec, l->endpoint)) {
            fds[n++] = l->fd;
        }
    }
    return n;
}
