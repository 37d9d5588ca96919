/*  drv_export_health — see the header. */
#include "drv_export_health.h"
#include "drv_events.h"
#include "drv_registry.h"

#include "drover/drv_log.h"
#include "drover/drv_node_counters.h"
#include "drover/drv_spec.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const drv_instance_t *inst; // NULL: no exporter failing
    const char *node;
    json_int_t failing_ms;
    const char *error;
} worst_t;

//  The exporter of inst that has failed longest, read from its heartbeat's
//  node counters (drover/drv_node_counters.h), if longer than
//  w->failing_ms. An exporter counts as failing while it holds what it
//  could not deliver, or while its attempts keep failing (one failed
//  within threshold_ms): one that failed once and has had nothing to send
//  since is idle, not failing.
static void s_worst(const drv_instance_t *inst, int64_t threshold_ms, worst_t *w)
{
    const char *node;
    json_t *counters;
    json_object_foreach(inst->nodes, node, counters)
    {
        if (!drv_node_counters_exporter(counters)) {
            continue;
        }
        json_int_t failing = drv_node_counter(counters, DRV_NC_FAILING_MS);
        json_int_t backlog = drv_node_counter(counters, DRV_NC_BACKLOG);
        json_int_t age = drv_node_counter(counters, DRV_NC_FAILURE_AGE_MS);
        bool recent = age >= 0 && age < threshold_ms;
        if ((backlog > 0 || recent) && failing > w->failing_ms) {
            const char *error = json_string_value(json_array_get(counters, DRV_NC_LAST_ERROR));
            *w = (worst_t){.inst = inst, .node = node, .failing_ms = failing, .error = error ? error : ""};
        }
    }
}

void drv_export_health_update(drv_engine_t *engine, drv_instance_t *inst)
{
    drv_pipeline_t *p = inst->pipeline;
    int64_t threshold_ms = drv_spec_policy(p->spec, "health", "exporter_failing_secs") * 1000;
    worst_t worst = {.failing_ms = threshold_ms - 1}; // only what failed past the threshold
    for (drv_instance_t *i = zlistx_first(p->instances); i; i = zlistx_next(p->instances)) {
        s_worst(i, threshold_ms, &worst);
    }
    bool failing = worst.inst != NULL;
    if (failing == p->exporter_failing) {
        return;
    }
    p->exporter_failing = failing;
    if (failing) {
        snprintf(p->exporter_failing_why, sizeof p->exporter_failing_why,
                 "exporter %s has delivered nothing for %lld s or more "
                 "(policies.health.exporter_failing_secs "
                 "%lld) on %s: %s",
                 worst.node, (long long)(worst.failing_ms / 1000), (long long)(threshold_ms / 1000), worst.inst->id,
                 worst.error);
        drv_warn("pipeline degraded pipeline=%s reason=ExporterFailing node=%s instance=%s "
                 "error=\"%s\"",
                 p->key, worst.node, worst.inst->id, worst.error);
        drv_events_publish(
            engine, "pipeline.exporter_failing", p->group, p->name,
            json_pack("{s:s, s:s, s:s}", "node", worst.node, "instance", worst.inst->id, "last_error", worst.error));
    } else {
        p->exporter_failing_why[0] = 0;
        drv_info("pipeline exporters deliver again pipeline=%s", p->key);
        drv_events_publish(engine, "pipeline.exporter_recovered", p->group, p->name, NULL);
    }
    drv_registry_touch(engine, p);
}
