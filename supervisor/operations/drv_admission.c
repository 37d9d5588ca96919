/*  drv_admission — the one admission check of every change to a pipeline. */
#include "drv_admission.h"
#include "drv_registry.h"
#include "drv_rollout.h"
#include "drv_shutdown.h"

#include "drover/drv_spec.h"

#include <stdio.h>
#include <string.h>

//  Another pipeline (or another generation of one) already has this endpoint.
static const char *s_endpoint_owner(drv_engine_t *engine, drv_pipeline_t *self, const char *endpoint)
{
    size_t count;
    drv_pipeline_t **all = drv_registry_pipelines(engine, &count);
    for (size_t k = 0; k < count; k++) {
        drv_pipeline_t *p = all[k];
        if (p == self || (!p->running && !p->active)) {
            continue;
        }
        json_t *receivers = drv_spec_receivers(p->spec, NULL);
        size_t i;
        json_t *r;
        bool found = false;
        json_array_foreach(receivers, i, r)
        {
            found |= !strcmp(json_string_value(json_object_get(r, "endpoint")), endpoint);
        }
        json_decref(receivers);
        if (found) {
            free(all);
            return p->key;
        }
    }
    free(all);
    return NULL;
}

bool drv_admission_busy(const drv_pipeline_t *pipeline, char *why, size_t whylen)
{
    const char *id = pipeline->active            ? drv_rollout_id(pipeline->active)
                     : pipeline->shutdown_active ? drv_shutdown_id(pipeline->shutdown_active)
                                                 : NULL;
    if (id) {
        snprintf(why, whylen, "%s is in progress on %s; try again when it ends", id, pipeline->key);
    }
    return id != NULL;
}

int drv_admission_check(drv_engine_t *engine, drv_pipeline_t *pipeline, const json_t *spec, drv_problems_t *problems,
                        char *why, size_t whylen)
{
    //  A receiver endpoint is one socket: one pipeline binds it.
    json_t *receivers = drv_spec_receivers(spec, NULL);
    size_t i;
    json_t *r;
    bool taken = false;
    json_array_foreach(receivers, i, r)
    {
        const char *endpoint = json_string_value(json_object_get(r, "endpoint"));
        const char *owner = s_endpoint_owner(engine, pipeline, endpoint);
        if (owner) {
            char path[200];
            snprintf(path, sizeof path, "nodes.%s.config.%s", json_string_value(json_object_get(r, "node")),
                     json_string_value(json_object_get(r, "key")));
            drv_problems_add(problems, path, "endpoint %s is already bound by pipeline %s", endpoint, owner);
            taken = true;
        }
    }
    json_decref(receivers);
    if (taken) {
        return DRV_ADMIT_INVALID;
    }
    if (pipeline && drv_admission_busy(pipeline, why, whylen)) {
        return DRV_ADMIT_CONFLICT;
    }
    if (engine->shutting_down) {
        snprintf(why, whylen, "droverd is shutting down");
    } else if (engine->upgrade_state == DRV_UPGRADE_CHECKING || engine->upgrade_state == DRV_UPGRADE_ROLLING) {
        snprintf(why, whylen,
                 "an upgrade of droverd is in progress (GET /api/v1/engine/upgrade); try again when it ends");
    } else if (!pipeline && drv_registry_pipeline_count(engine) >= (size_t)engine->config->max_pipelines) {
        snprintf(why, whylen,
                 "%zu pipelines exist, the most this engine runs (engine.limits.max_pipelines); "
                 "delete one or raise the limit",
                 drv_registry_pipeline_count(engine));
    } else {
        return DRV_ADMIT_OK;
    }
    return DRV_ADMIT_CONFLICT;
}
