/*  drv_operations — see drv_operations.h. */
#include "drv_operations.h"
#include "drv_admission.h"
#include "drv_registry.h"
#include "drv_rollout.h"
#include "drv_shutdown.h"

#include "drover/drv_time.h"

drv_change_outcome_t drv_operations_apply(drv_engine_t *engine, const drv_change_t *change, drv_problems_t *problems,
                                          char *why, size_t whylen, drv_rollout_t **rollout)
{
    *rollout = NULL;
    drv_pipeline_t *pipeline = drv_registry_pipeline(engine, change->group, change->name);
    if (change->admit) {
        int admit = drv_admission_check(engine, pipeline, change->spec, problems, why, whylen);
        if (admit == DRV_ADMIT_INVALID || drv_problems_count(problems) > 0) {
            return DRV_CHANGE_INVALID;
        }
        if (admit == DRV_ADMIT_CONFLICT) {
            return DRV_CHANGE_REFUSED;
        }
    }
    if (change->generation > 0) {
        //  It comes up as that generation: the planner numbers a new one
        //  past every number taken (drv_planner.c).
        pipeline = pipeline ? pipeline : drv_registry_add_pipeline(engine, change->group, change->name, change->spec);
        if (pipeline->next_generation < change->generation) {
            pipeline->next_generation = change->generation;
        }
    }
    *rollout = drv_rollout_plan(engine, pipeline, change->group, change->name, change->spec, &change->opts);
    if (change->opts.dry_run) {
        return DRV_CHANGE_PLANNED;
    }
    if (!pipeline) {
        pipeline = drv_registry_add_pipeline(engine, change->group, change->name, change->spec);
    }
    bool changes = drv_rollout_action(*rollout) != DRV_ACTION_NOOP;
    if (pipeline->source != change->source && (changes || !change->source_if_changed)) {
        //  The API's change makes it the API's from now on, and a reload of
        //  an unchanged file entry leaves it alone (docs/operations.md, "Reload").
        pipeline->source = change->source;
        engine->state_dirty = true;
    }
    if (change->owner) {
        drv_registry_set_owner(pipeline, change->owner);
    }
    engine->state_dirty |= drv_source_kept(change->source); // that source is kept in the state file
    drv_registry_touch(engine, pipeline);                   // status shows the source
    drv_rollout_start(engine, pipeline, *rollout);
    return DRV_CHANGE_STARTED;
}

void drv_operations_on_instance(drv_engine_t *engine, drv_instance_t *inst, drv_inst_event_t event, int code)
{
    drv_shutdown_on_instance(engine, inst, event, code);
    //  Run on the next turn of the loop: an exited instance is removed only
    //  after its listeners heard of it.
    inst->pipeline->woken = inst->pipeline->active || inst->pipeline->shutdown_active;
}

static int64_t s_sooner(int64_t next, int64_t wait)
{
    return wait >= 0 && (next < 0 || wait < next) ? wait : next;
}

typedef struct {
    int64_t now;
    int64_t next;
} tick_t;

static void s_tick(drv_engine_t *engine, drv_pipeline_t *p, void *arg)
{
    tick_t *tick = arg;
    if (p->active) {
        int64_t deadline = drv_rollout_deadline(p->active);
        if (p->woken || (deadline > 0 && tick->now >= deadline)) {
            p->woken = false;
            drv_rollout_run(engine, p);
        }
        deadline = p->active ? drv_rollout_deadline(p->active) : 0;
        if (deadline > 0) {
            tick->next = s_sooner(tick->next, (deadline > tick->now ? deadline - tick->now : 0) + 1);
        }
    } else if (p->shutdown_active) {
        if (p->woken) {
            p->woken = false;
            drv_shutdown_run(engine, p); // may remove p
        }
    }
}

//  Calls fn for every busy pipeline (fn may remove it).
static void s_each_busy(drv_engine_t *engine, drv_pipeline_fn *fn, void *arg)
{
    size_t count = engine->busy ? zlistx_size(engine->busy) : 0, n = 0;
    if (count == 0) {
        return;
    }
    drv_pipeline_t **busy = calloc(count, sizeof *busy);
    for (drv_pipeline_t *p = zlistx_first(engine->busy); p && n < count; p = zlistx_next(engine->busy)) {
        busy[n++] = p;
    }
    for (size_t i = 0; i < n; i++) {
        fn(engine, busy[i], arg);
    }
    free(busy);
}

int64_t drv_operations_tick(drv_engine_t *engine)
{
    tick_t tick = {drv_time_mono_ms(), -1};
    s_each_busy(engine, s_tick, &tick);
    return tick.next;
}

static void s_stop(drv_engine_t *engine, drv_pipeline_t *p, void *arg)
{
    drv_rollout_abort(engine, p, "droverd is stopping");
    if (!p->shutdown_active) {
        drv_shutdown_start(engine, p, *(int64_t *)arg, false);
    }
}

void drv_operations_stop_all(drv_engine_t *engine, int64_t drain_ms)
{
    drv_registry_each_pipeline(engine, s_stop, &drain_ms);
}
