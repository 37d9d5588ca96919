/*  drv_prom_names: OpenTelemetry names as Prometheus names, as the
    Prometheus compatibility specification's examples give them; label
    names; floats as Prometheus clients write le and quantile. */
#include "drv_prom.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

static void s_name(const char *name, const char *unit, bool counter, bool gauge, const char *want)
{
    char out[DRV_PROM_NAME_MAX];
    drv_prom_metric_name(name, strlen(name), unit, strlen(unit), counter, gauge, out, sizeof out);
    assert_string_equal(out, want);
}

static void test_metric_names(void **state)
{
    (void)state;
    s_name("system.cpu.time", "s", true, false, "system_cpu_time_seconds_total");
    s_name("system.memory.usage", "By", false, true, "system_memory_usage_bytes");
    s_name("http.server.duration", "ms", false, false, "http_server_duration_milliseconds");
    s_name("system.network.packets", "{packet}", true, false, "system_network_packets_total");
    s_name("cpu.utilization", "1", false, true, "cpu_utilization_ratio");
    s_name("requests", "1", true, false, "requests_total"); // a counter of unit 1: no ratio
    s_name("throughput", "By/s", false, true, "throughput_bytes_per_second");
    s_name("speed", "m/h", false, true, "speed_meters_per_hour");
    s_name("node_cpu_seconds_total", "s", true, false, "node_cpu_seconds_total"); // already says both
    s_name("a..b--c", "", false, true, "a_b_c");
    s_name("2xx.count", "", true, false, "_2xx_count_total");
    s_name("temp", "Cel", false, true, "temp_celsius");
    s_name("load", "{thread}/min", false, true, "load_per_min"); // min is no per-unit the spec names
    s_name("rate", "{packet}/s", false, true, "rate_per_second");
}

static void test_label_names(void **state)
{
    (void)state;
    char out[64];
    drv_prom_label_name("http.route", 10, out, sizeof out);
    assert_string_equal(out, "http_route");
    drv_prom_label_name("0day", 4, out, sizeof out);
    assert_string_equal(out, "key_0day");
}

static void test_floats_as_prometheus_writes_them(void **state)
{
    (void)state;
    const struct {
        double value;
        const char *text;
    } cases[] = {{10, "10"},
                 {0.005, "0.005"},
                 {0.25, "0.25"},
                 {100000, "100000"},
                 {1e6, "1e+06"},
                 {2.5e-5, "2.5e-05"},
                 {1.0 / 3, "0.3333333333333333"},
                 {-1, "-1"}};
    char out[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        drv_prom_float_text(cases[i].value, out, sizeof out);
        assert_string_equal(out, cases[i].text);
    }
    drv_prom_float_text(1.0 / 0.0, out, sizeof out);
    assert_string_equal(out, "+Inf");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metric_names),
        cmocka_unit_test(test_label_names),
        cmocka_unit_test(test_floats_as_prometheus_writes_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
