/*  A JSON request body, as PUT /api/v1/groups/G/pipelines/P receives it: parsed
    by jansson, its PipelineSpec validated and normalized. A normalized spec
    must survive the msgpack wire encoding unchanged and hash the same. */
#include "fuzz.h"

#include "drv_lua.h"
#include "drv_schemas.h"

#include "drover/drv_node_schema.h"

#include "drover/drv_mpjson.h"
#include "drover/drv_problems.h"
#include "drover/drv_spec.h"

#include <stdlib.h>
#include <string.h>

static const drv_cpus_t s_cpus = {.count = 4, .ids = {0, 1, 2, 3}};
static const drv_spec_env_t s_env = {.cpus = &s_cpus};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    drv_schemas_register();
    drv_spec_set_script_check(drv_lua_script_check, NULL);
    json_error_t jerr;
    json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!body) {
        return 0;
    }
    json_t *raw = json_object_get(body, "pipeline") ? json_object_get(body, "pipeline") : body;
    drv_problems_t *problems = drv_problems_new();
    json_t *spec = drv_spec_normalize(raw, &s_env, "", problems);
    FUZZ_ASSERT(spec || drv_problems_count(problems) > 0);
    if (spec) {
        char *wire;
        size_t wire_size;
        FUZZ_ASSERT(drv_mpjson_encode(spec, &wire, &wire_size) == 0);
        char err[200];
        json_t *back = drv_mpjson_decode(wire, wire_size, err, sizeof err);
        FUZZ_ASSERT(back && json_equal(back, spec));
        char *h1 = drv_spec_hash(spec);
        char *h2 = drv_spec_hash(back);
        FUZZ_ASSERT(!strcmp(h1, h2));
        free(h1);
        free(h2);
        json_decref(back);
        free(wire);
        json_decref(spec);
    }
    drv_problems_destroy(&problems);
    json_decref(body);
    return 0;
}
