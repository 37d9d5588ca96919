/*  A hostile zmq admin frame all the way to a plan: the envelope decoded and
    checked as droverd does, its body's spec normalized (with data_dirs),
    then planned against nothing running and against a running generation;
    every serialisation on the way must succeed. What issue 10 found here:
    a msgpack bin value or invalid UTF-8 reached json_dumps, whose NULL was
    used unchecked in the state save and the planner. */
#include "fuzz.h"

#include "drv_schemas.h"

#include "drover/drv_node_schema.h"

#include "drv_admin.h"
#include "drv_planner.h"

#include "drover/drv_spec.h"

#include <stdlib.h>
#include <string.h>

static const drv_cpus_t s_cpus = {.count = 4, .ids = {0, 1, 2, 3}};
static const char *const s_dirs[] = {"/var/lib/drover"};
static const drv_spec_env_t s_env = {
    .cpus = &s_cpus, .data_dirs = s_dirs, .data_dir_count = 1, .run_dir = "/run/drover"};
static const char s_running[] =
    "{\"cores\":{\"count\":2},\"nodes\":{\"g\":{\"type\":\"receiver:generator\",\"config\":{\"rate\":0,"
    "\"count\":0,\"record\":{}},\"to\":[\"n\"]},\"n\":{\"type\":\"exporter:null\",\"config\":{},\"to\":[]}},"
    "\"policies\":{}}";

static void s_plan(const json_t *spec)
{
    int cores[DRV_CPUS_MAX];
    int count = drv_spec_cores(spec, &s_cpus, cores, DRV_CPUS_MAX);
    FUZZ_ASSERT(count >= 1 && count <= s_cpus.count);
    char *hash = drv_spec_hash(spec);
    FUZZ_ASSERT(hash);
    free(hash);
    char *text = json_dumps(spec, JSON_SORT_KEYS | JSON_COMPACT);
    FUZZ_ASSERT(text);
    free(text);
    drv_plan_t plan = {0}, undo = {0};
    drv_observed_t none = {.running = false, .generation = 0};
    drv_plan_make(spec, cores, count, &none, &plan);
    FUZZ_ASSERT(plan.action == DRV_ACTION_CREATE && plan.count > 0 && plan.count <= 3 * (size_t)s_cpus.count);
    json_t *running = json_loads(s_running, 0, NULL);
    const int running_cores[] = {0, 1};
    drv_observed_t observed = {
        .running = true, .spec = running, .generation = 3, .cores = running_cores, .core_count = 2};
    drv_plan_make(spec, cores, count, &observed, &plan);
    FUZZ_ASSERT(plan.count <= 4 * (size_t)s_cpus.count + 4);
    FUZZ_ASSERT(plan.action != DRV_ACTION_CREATE);
    json_t *shown = drv_plan_to_json(&plan);
    text = json_dumps(shown, JSON_COMPACT);
    FUZZ_ASSERT(text);
    free(text);
    json_decref(shown);
    drv_plan_rollback(&plan, plan.count / 2, &observed, &undo);
    FUZZ_ASSERT(undo.count <= plan.count * 3);
    drv_plan_clear(&plan);
    drv_plan_clear(&undo);
    json_decref(running);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    drv_schemas_register();
    char why[340] = "";
    drv_admin_request_t *request = drv_admin_envelope_decode(data, size, why, sizeof why);
    if (!request) {
        FUZZ_ASSERT(why[0]);
        return 0;
    }
    json_t *raw = json_object_get(request->body, "pipeline");
    if (raw) {
        drv_problems_t *problems = drv_problems_new();
        json_t *spec = drv_spec_normalize(raw, &s_env, "", problems);
        FUZZ_ASSERT(spec || drv_problems_count(problems) > 0);
        if (spec) {
            s_plan(spec);
            json_decref(spec);
        } else {
            //  A 422's body: every problem must serialise.
            json_t *details = drv_problems_to_json(problems);
            char *text = json_dumps(details, JSON_COMPACT);
            FUZZ_ASSERT(text);
            free(text);
            json_decref(details);
        }
        drv_problems_destroy(&problems);
    }
    drv_admin_request_free(request);
    return 0;
}
