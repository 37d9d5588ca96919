/*  drv_export_health — see the header. */
#include "drv_export_health.h"
#include "drv_events.h"
#include "drv_registry.h"

#include "drover/drv_log.h"
#include "drover/drv_spec.h"

#include <stdio.h>
#include <string.h>

//  The instance's exporter that has failed longest, from its heartbeat's
//  node counters ([in, out, dropped, errors, retries, backlog, failing_ms,
//  last_error, last_failure_age_ms] for exporters). An exporter counts as
//  failing while it holds what it could not deliver, or while its attempts
//  keep failing (one failed within threshold_ms): one that failed once and
//  has had nothing to send since is idle, not failing.
static void s_worst(drv_instance_t *inst, int64_t threshold_ms)
{
    inst->export_failing_ms = 0;
    inst->export_failing_node[0] = 0;
    inst->export_failing_error[0] = 0;
    const char *node;
    json_t *counters;
    json_object_foreach(inst->nodes, node, counters)
    {
        json_int_t failing = json_integer_value(json_array_get(counters, 6));
        json_int_t backlog = json_integer_value(json_array_get(counters, 5));
        json_t *age = json_array_get(counters, 8);
        bool recent = json_is_integer(age) && json_integer_value(age) >= 0 &&
                      json_integer_value(age) < threshold_ms;
        if (backlog == 0 && !recent) {
            failing = 0;
        }
        if (failing > inst->export_failing_ms) {
            inst->export_failing_ms = failing;
            snprintf(inst->export_failing_node, sizeof inst->export_failing_node, "%s", node);
            const char *error = json_string_value(json_array_get(counters, 7));
            snprintf(inst->export_failing_error, sizeof inst->export_failing_error, "%s",
                     error ? error : "");
        }
    }
}

void drv_export_health_update(drv_engine_t *engine, drv_instance_t *inst)
{
    drv_pipeline_t *p = inst->pipeline;
    int64_t threshold_ms = drv_spec_policy(p->spec, "health", "exporter_failing_secs") * 1000;
    s_worst(inst, threshold_ms);
    const drv_instance_t *worst = NULL;
    for (drv_instance_t *i = zlistx_first(p->instances); i; i = zlistx_next(p->instances)) {
        if (i->export_failing_ms >= threshold_ms &&
            (!worst || i->export_failing_ms > worst->export_failing_ms)) {
            worst = i;
        }
    }
    bool failing = worst != NULL;
    if (failing == p->exporter_failing) {
        return;
    }
    p->exporter_failing = failing;
    if (failing) {
        snprintf(p->exporter_failing_why, sizeof p->exporter_failing_why,
                 "exporter %s has delivered nothing for %lld s or more "
                 "(policies.health.exporter_failing_secs "
                 "%lld) on %s: %s",
                 worst->export_failing_node, (long long)(worst->export_failing_ms / 1000),
                 (long long)(threshold_ms / 1000), worst->id, worst->export_failing_error);
        drv_warn("pipeline degraded pipeline=%s reason=exporter_failing node=%s instance=%s "
                 "error=\"%s\"",
                 p->key, worst->export_failing_node, worst->id, worst->export_failing_error);
        drv_events_publish(engine, "pipeline.exporter_failing", p->group, p->name,
                           json_pack("{s:s, s:s, s:s}", "node", worst->export_failing_node,
                                     "instance", worst->id, "last_error",
                                     worst->export_failing_error));
    } else {
        p->exporter_failing_why[0] = 0;
        drv_info("pipeline exporters deliver again pipeline=%s", p->key);
        drv_events_publish(engine, "pipeline.exporter_recovered", p->group, p->name, NULL);
    }
    drv_registry_touch(engine, p);
}
