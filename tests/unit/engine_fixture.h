/*  For unit tests of droverd's layers that need a registry but no process:
    an engine record with one CPU and the default group, set up and torn
    down around each test (cmocka's setup and teardown). */
#ifndef TEST_ENGINE_FIXTURE_H
#define TEST_ENGINE_FIXTURE_H

#include "drv_registry.h"

#include <string.h>

static drv_engine_t s_engine;
static drv_config_t s_config;

static int engine_setup(void **state)
{
    (void)state;
    memset(&s_engine, 0, sizeof s_engine);
    memset(&s_config, 0, sizeof s_config);
    s_config.max_pipelines = 3; // engine.limits.max_pipelines (test_admission reaches it)
    s_engine.config = &s_config;
    s_engine.cpus.count = 1;
    drv_registry_group(&s_engine, "default", true);
    return 0;
}

static int engine_teardown(void **state)
{
    (void)state;
    drv_registry_destroy(&s_engine);
    return 0;
}

#endif
