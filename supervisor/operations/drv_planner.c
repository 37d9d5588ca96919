/*  drv_planner — create, noop, resize or replace, and the order of steps.

    create starts every core at once (there is nothing to hand over).
    replace, core by core: added cores first (nothing to hand over), then each
    kept core (start N+1, wait until ready, switch traffic, drain N), removed
    cores last (drain N). So capacity never drops below what it was, and a
    failure is found on the first core, before the old generation lost any.
    resize keeps the generation and touches only added and removed cores.
    shutdown and delete close the front doors first (the broker forwards what
    it already accepted), retire every instance at once, then wait for each. */
#include "drv_planner.h"

#include "drover/drv_spec.h"

#include <stdlib.h>
#include <string.h>

const char *drv_action_name(drv_action_t action)
{
    static const char *names[] = {"create", "noop", "resize", "replace", "shutdown", "delete"};
    return action <= DRV_ACTION_DELETE ? names[action] : "?";
}

const char *drv_op_name(drv_op_t op)
{
    static const char *names[] = {"start", "wait_ready", "switch",    "drain", "stop",
                                  "close", "retire",     "wait_gone", "hold"};
    return op <= DRV_OP_HOLD ? names[op] : "?";
}

static void s_add(drv_plan_t *plan, drv_op_t op, int core, int64_t generation)
{
    if (plan->count == plan->capacity) {
        size_t capacity = plan->capacity ? plan->capacity * 2 : 8;
        drv_step_t *steps = realloc(plan->steps, capacity * sizeof *steps);
        if (!steps) {
            abort(); // a plan is a few steps per core: no memory for that is not recoverable
        }
        plan->steps = steps;
        plan->capacity = capacity;
    }
    plan->steps[plan->count++] = (drv_step_t){op, core, generation};
}

void drv_plan_clear(drv_plan_t *plan)
{
    free(plan->steps);
    memset(plan, 0, sizeof *plan);
}

void drv_plan_starts_first(drv_plan_t *plan)
{
    drv_step_t *ordered = malloc((plan->count ? plan->count : 1) * sizeof *ordered);
    if (!ordered) {
        abort();
    }
    size_t n = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < plan->count; i++) {
            if ((plan->steps[i].op == DRV_OP_START) == (pass == 0)) {
                ordered[n++] = plan->steps[i];
            }
        }
    }
    free(plan->steps);
    plan->steps = ordered;
    plan->capacity = plan->count;
}

static void s_bring_up(drv_plan_t *plan, int core, int64_t generation)
{
    s_add(plan, DRV_OP_START, core, generation);
    s_add(plan, DRV_OP_WAIT_READY, core, generation);
    s_add(plan, DRV_OP_SWITCH, core, generation);
}

static bool s_has(const int *cores, int count, int core)
{
    for (int i = 0; i < count; i++) {
        if (cores[i] == core) {
            return true;
        }
    }
    return false;
}

//  Equal apart from `cores`: "only cores changed". json_equal ignores key
//  order, as the spec hash does, and cannot fail on any input.
static bool s_equal_without_cores(const json_t *a, const json_t *b)
{
    json_t *copy_a = json_deep_copy(a);
    json_t *copy_b = json_deep_copy(b);
    json_object_del(copy_a, "cores");
    json_object_del(copy_b, "cores");
    bool equal = json_equal(copy_a, copy_b);
    json_decref(copy_a);
    json_decref(copy_b);
    return equal;
}

//  The number a new generation takes: never one a rollout took before,
//  even one that failed (a failed 4 -> 5 then a later 4 -> 6).
static int64_t s_next(const drv_observed_t *observed)
{
    return observed->next_generation > observed->generation + 1 ? observed->next_generation : observed->generation + 1;
}

void drv_plan_make(const json_t *spec, const int *cores, int core_count, const drv_observed_t *observed,
                   drv_plan_t *plan)
{
    drv_plan_clear(plan);
    if (!observed->running) {
        //  Nothing to hand over: every core starts at once, then each is
        //  waited for (health-gated) and switched.
        plan->action = DRV_ACTION_CREATE;
        plan->target_generation = s_next(observed);
        plan->previous_generation = 0;
        for (drv_op_t op = DRV_OP_START; op <= DRV_OP_SWITCH; op++) {
            for (int i = 0; i < core_count; i++) {
                s_add(plan, op, cores[i], plan->target_generation);
            }
        }
        return;
    }
    bool same = json_equal(spec, observed->spec) && !observed->renew;
    bool same_cores = core_count == observed->core_count;
    for (int i = 0; same_cores && i < core_count; i++) {
        same_cores = cores[i] == observed->cores[i];
    }
    int64_t n = observed->generation;
    plan->previous_generation = n;
    if (same) {
        plan->action = DRV_ACTION_NOOP;
        plan->target_generation = n;
        return;
    }
    bool only_cores = s_equal_without_cores(spec, observed->spec) && !observed->renew;
    if (only_cores && same_cores) {
        //  {count: 2} became {set: [0, 1]}: a different spec, the same cores.
        plan->action = DRV_ACTION_RESIZE;
        plan->target_generation = n;
        return;
    }
    if (only_cores) {
        plan->action = DRV_ACTION_RESIZE;
        plan->target_generation = n;
        for (int i = 0; i < core_count; i++) {
            if (!s_has(observed->cores, observed->core_count, cores[i])) {
                s_bring_up(plan, cores[i], n);
            }
        }
        for (int i = 0; i < observed->core_count; i++) {
            if (!s_has(cores, core_count, observed->cores[i])) {
                s_add(plan, DRV_OP_DRAIN, observed->cores[i], n);
            }
        }
        return;
    }
    int64_t next = s_next(observed);
    plan->action = DRV_ACTION_REPLACE;
    plan->target_generation = next;
    for (int i = 0; i < core_count; i++) {
        if (!s_has(observed->cores, observed->core_count, cores[i])) {
            s_bring_up(plan, cores[i], next);
        }
    }
    for (int i = 0; i < core_count; i++) {
        if (s_has(observed->cores, observed->core_count, cores[i])) {
            s_bring_up(plan, cores[i], next);
            s_add(plan, DRV_OP_DRAIN, cores[i], n);
        }
    }
    for (int i = 0; i < observed->core_count; i++) {
        if (!s_has(cores, core_count, observed->cores[i])) {
            s_add(plan, DRV_OP_DRAIN, observed->cores[i], n);
        }
    }
}

void drv_plan_canary(drv_plan_t *plan, const int *cores, int core_count, const drv_observed_t *observed,
                     int canary_cores)
{
    if (plan->action != DRV_ACTION_REPLACE || canary_cores <= 0 || core_count <= 0) {
        return;
    }
    int64_t n = plan->previous_generation, next = plan->target_generation; // drv_plan_make's numbers
    //  The target cores, those the old generation serves first.
    int order[core_count];
    int kept = 0, k = 0;
    for (int i = 0; i < core_count; i++) {
        if (s_has(observed->cores, observed->core_count, cores[i])) {
            order[k++] = cores[i];
        }
    }
    kept = k;
    for (int i = 0; i < core_count; i++) {
        if (!s_has(observed->cores, observed->core_count, cores[i])) {
            order[k++] = cores[i];
        }
    }
    int canary = canary_cores < core_count ? canary_cores : core_count;
    bool overlap = canary >= kept; // no old core would serve beside it: share the cores instead
    drv_plan_clear(plan);
    plan->action = DRV_ACTION_REPLACE;
    plan->previous_generation = n;
    plan->target_generation = next;
    for (int i = 0; i < canary; i++) {
        s_bring_up(plan, order[i], next);
        if (i < kept && !overlap) {
            s_add(plan, DRV_OP_DRAIN, order[i], n);
        }
    }
    s_add(plan, DRV_OP_HOLD, -1, next);
    for (int i = 0; overlap && i < canary && i < kept; i++) {
        s_add(plan, DRV_OP_DRAIN, order[i], n);
    }
    //  The rest as a plain replace has them: added cores, kept cores, removed ones.
    for (int i = canary > kept ? canary : kept; i < core_count; i++) {
        s_bring_up(plan, order[i], next);
    }
    for (int i = canary; i < kept; i++) {
        s_bring_up(plan, order[i], next);
        s_add(plan, DRV_OP_DRAIN, order[i], n);
    }
    for (int i = 0; i < observed->core_count; i++) {
        if (!s_has(cores, core_count, observed->cores[i])) {
            s_add(plan, DRV_OP_DRAIN, observed->cores[i], n);
        }
    }
}

void drv_plan_rollback(const drv_plan_t *plan, size_t done, const drv_observed_t *observed, drv_plan_t *rollback)
{
    drv_plan_clear(rollback);
    rollback->action = plan->action;
    rollback->target_generation = plan->previous_generation;
    rollback->previous_generation = plan->target_generation;
    //  Walk back over what was done, newest first. An old instance that was
    //  drained comes back (and is ready) before the new one on its core goes.
    for (size_t i = done; i-- > 0;) {
        const drv_step_t *step = &plan->steps[i];
        bool old_generation = step->generation == plan->previous_generation && plan->action != DRV_ACTION_CREATE;
        if (step->op == DRV_OP_DRAIN && old_generation && s_has(observed->cores, observed->core_count, step->core)) {
            s_bring_up(rollback, step->core, step->generation);
        } else if (step->op == DRV_OP_START &&
                   (plan->action == DRV_ACTION_REPLACE || plan->action == DRV_ACTION_CREATE ||
                    !s_has(observed->cores, observed->core_count, step->core))) {
            //  Started by this rollout: it goes. Drained if it may have had
            //  traffic, which the executor knows; the plan says stop.
            s_add(rollback, DRV_OP_STOP, step->core, step->generation);
        }
    }
}

void drv_plan_shutdown(const drv_slot_t *slots, size_t count, int64_t generation, bool forget, drv_plan_t *plan)
{
    drv_plan_clear(plan);
    plan->action = forget ? DRV_ACTION_DELETE : DRV_ACTION_SHUTDOWN;
    plan->previous_generation = generation;
    plan->target_generation = 0;
    s_add(plan, DRV_OP_CLOSE, -1, 0);
    for (size_t i = 0; i < count; i++) {
        s_add(plan, DRV_OP_RETIRE, slots[i].core, slots[i].generation);
    }
    for (size_t i = 0; i < count; i++) {
        s_add(plan, DRV_OP_WAIT_GONE, slots[i].core, slots[i].generation);
    }
}

json_t *drv_plan_to_json(const drv_plan_t *plan)
{
    json_t *steps = json_array();
    for (size_t i = 0; i < plan->count; i++) {
        json_array_append_new(steps, json_pack("{s:i, s:s, s:i, s:I}", "step", (int)i + 1, "op",
                                               drv_op_name(plan->steps[i].op), "core", plan->steps[i].core,
                                               "generation", (json_int_t)plan->steps[i].generation));
    }
    return steps;
}
