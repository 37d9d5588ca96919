/*  The config file parser: YAML through libyaml into jansson, every engine key,
    every group and pipeline through the spec validator. Anything may be
    refused; nothing may crash, leak or hang. */
#include "fuzz.h"

#include "drv_lua.h"
#include "drv_schemas.h"

#include "drover/drv_node_schema.h"

#include "drover/drv_config.h"

static const drv_cpus_t s_cpus = {.count = 4, .ids = {0, 1, 2, 3}};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    drv_schemas_register();
    drv_spec_set_script_check(drv_lua_script_check, NULL);
    char err[600];
    drv_config_t *config = drv_config_parse((const char *)data, size, "fuzz.yaml", &s_cpus, err, sizeof err);
    FUZZ_ASSERT(config || err[0]); // refused means a reason
    drv_config_destroy(&config);
    return 0;
}
