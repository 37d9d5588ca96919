/*  processor:route — sends each record to the nodes of the first route
    whose condition it meets (drv_condition.h: an OTTL `condition`, or the
    filter's field, op and value as `when`; a condition that cannot be
    evaluated on a record is not met, counted in errors), else to `default`; a record that matches no route and has no
    default goes nowhere. The routes' targets are the node's edges (the
    schema's targets hook): the spec checks them like `to`, which this
    node does not use. */
#include "drv_condition.h"
#include "drv_node.h"
#include "drv_schemas.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    drv_condition_t when; // unused by the default route
    int *targets;
    size_t target_count;
} route_t;

typedef struct {
    route_t *routes; // count routes, then the default as the last
    size_t count;
} router_t;

//  A route's target ids as node indexes (they exist: the spec said so).
static int s_resolve(drv_node_t *node, route_t *route, const json_t *to)
{
    route->targets = calloc(json_array_size(to) + 1, sizeof *route->targets);
    size_t i;
    json_t *id;
    json_array_foreach(to, i, id)
    {
        int index = drv_node_find(node, json_string_value(id));
        if (index < 0) {
            return -1;
        }
        route->targets[route->target_count++] = index;
    }
    return 0;
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    router_t *self = calloc(1, sizeof *self);
    node->state = self;
    json_t *routes = json_object_get(config, "routes");
    self->count = json_array_size(routes);
    self->routes = calloc(self->count + 1, sizeof *self->routes);
    size_t i;
    json_t *route;
    json_array_foreach(routes, i, route)
    {
        char why[400];
        json_t *condition = json_object_get(route, "condition");
        if (drv_condition_init(&self->routes[i].when, node, condition ? condition : json_object_get(route, "when"), why,
                               sizeof why) != 0 ||
            s_resolve(node, &self->routes[i], json_object_get(route, "to")) != 0) {
            snprintf(err, errlen, "node %s: cannot build route %zu: %s", node->id, i, why);
            return -1;
        }
    }
    if (s_resolve(node, &self->routes[self->count], json_object_get(config, "default")) != 0) {
        snprintf(err, errlen, "node %s: cannot build the default route", node->id);
        return -1;
    }
    return 0;
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    router_t *self = node->state;
    size_t routes = self->count + 1;
    //  Each route's records, in their order: route r's are at picked[r * n ..].
    msgpack_object *picked = drv_node_alloc(node, routes * (n ? n : 1) * sizeof *picked);
    size_t *counts = drv_node_alloc(node, routes * sizeof *counts);
    memset(counts, 0, routes * sizeof *counts);
    for (size_t i = 0; i < n; i++) {
        size_t r = 0;
        char why[300];
        int met = 0;
        while (r < self->count &&
               (met = drv_condition_test(&self->routes[r].when, &records[i], why, sizeof why)) != 1) {
            if (met < 0) {
                drv_node_record_error(node, why); // not met: the next route is tried
            }
            r++;
        }
        picked[r * n + counts[r]++] = records[i];
    }
    for (size_t r = 0; r < routes; r++) {
        if (self->routes[r].target_count == 0) {
            drv_node_count_dropped(node, counts[r]); // no default: matched nothing, goes nowhere
        } else {
            drv_node_count_out(node, counts[r]);
        }
        for (size_t t = 0; counts[r] > 0 && t < self->routes[r].target_count; t++) {
            drv_node_send(node, self->routes[r].targets[t], &picked[r * n], counts[r]);
        }
    }
}

static void s_destroy(drv_node_t *node)
{
    router_t *self = node->state;
    if (self) {
        for (size_t i = 0; i <= self->count && self->routes; i++) {
            free(self->routes[i].targets);
            drv_condition_fini(&self->routes[i].when);
        }
        free(self->routes);
        free(self);
    }
}

const drv_node_kind_t drv_processor_route = {
    .schema = &drv_schema_processor_route,
    .init = s_init,
    .run = s_run,
    .destroy = s_destroy,
};
