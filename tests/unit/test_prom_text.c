/*  drv_prom_text and drv_prom_points: the text format 0.0.4 and OpenMetrics
    1.0 as a target writes them, every metric type, escapes, timestamps,
    exemplars; what is refused says the line; and the points they become
    (a histogram's buckets no longer cumulative). */
#include "drv_prom_points.h"
#include "drv_prom_text.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct {
    char lines[64][256];
    int count;
} seen_t;

static void s_seen(void *arg, const drv_prom_sample_t *s)
{
    seen_t *seen = arg;
    char *out = seen->lines[seen->count++];
    int at = snprintf(out, 256, "%s|%s|%d|", s->family, s->name, (int)s->type);
    for (size_t i = 0; i < s->label_count; i++) {
        at += snprintf(out + at, (size_t)(256 - at), "%s=%s,", s->labels[i].name, s->labels[i].value);
    }
    snprintf(out + at, (size_t)(256 - at), "|%g|%lld", s->value, (long long)s->timestamp_ms);
}

static int s_parse(const char *text, bool om, seen_t *seen, char *err)
{
    char *copy = strdup(text);
    memset(seen, 0, sizeof *seen);
    int n = drv_prom_text_parse(copy, strlen(copy), om, 1000, s_seen, seen, err, 300);
    free(copy);
    return n;
}

static void test_text_format(void **state)
{
    (void)state;
    const char *text = "# HELP http_requests_total The total.\n"
                       "# TYPE http_requests_total counter\n"
                       "http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n"
                       "http_requests_total{method=\"post\",code=\"400\"}    3 1395066363000\n"
                       "\n"
                       "msdos_file_access_time_seconds{path=\"C:\\\\DIR\\\\FILE.TXT\",error=\"Cannot find "
                       "file:\\n\\\"FILE.TXT\\\"\"} 1.458255915e9\n"
                       "# TYPE rpc_duration_seconds summary\n"
                       "rpc_duration_seconds{quantile=\"0.5\"} 4773\n"
                       "rpc_duration_seconds_sum 1.7560473e+07\n"
                       "rpc_duration_seconds_count 2693\n"
                       "# TYPE http_request_duration_seconds histogram\n"
                       "http_request_duration_seconds_bucket{le=\"0.05\"} 24054\n"
                       "http_request_duration_seconds_bucket{le=\"+Inf\"} 144320\n"
                       "http_request_duration_seconds_count 144320\n"
                       "metric_without_timestamp_and_labels 12.47\n"
                       "nan_gauge NaN\n";
    seen_t seen;
    char err[300] = "";
    assert_int_equal(s_parse(text, false, &seen, err), 11);
    assert_string_equal(seen.lines[0],
                        "http_requests_total|http_requests_total|1|method=post,code=200,|1027|1395066363000");
    assert_string_equal(seen.lines[2], "msdos_file_access_time_seconds|msdos_file_access_time_seconds|0|"
                                       "path=C:\\DIR\\FILE.TXT,error=Cannot find file:\n\"FILE.TXT\",|1.45826e+09|-1");
    assert_string_equal(seen.lines[4], "rpc_duration_seconds|rpc_duration_seconds_sum|4||1.75605e+07|-1");
    assert_string_equal(seen.lines[6],
                        "http_request_duration_seconds|http_request_duration_seconds_bucket|3|le=0.05,|24054|-1");
    assert_string_equal(seen.lines[10], "nan_gauge|nan_gauge|0||nan|-1");
}

static void test_openmetrics(void **state)
{
    (void)state;
    const char *text = "# TYPE acme_http_router_request_seconds summary\n"
                       "# UNIT acme_http_router_request_seconds seconds\n"
                       "acme_http_router_request_seconds_sum{path=\"/api/v1\",method=\"GET\"} 9036.32\n"
                       "# TYPE foo counter\n"
                       "foo_total 17.0 1520879607.789 # {id=\"counter-test\"} 5\n"
                       "foo_created 1520430000.123\n"
                       "# EOF\n"
                       "after_eof 1\n";
    seen_t seen;
    char err[300] = "";
    assert_int_equal(s_parse(text, true, &seen, err), 3);
    assert_string_equal(seen.lines[1], "foo|foo_total|1||17|1520879607789");
}

static void test_refusals_name_the_line(void **state)
{
    (void)state;
    const char *bad[][2] = {{"ok 1\n{bad} 1\n", "line 2"},
                            {"a{b=\"c} 1\n", "closing quote"},
                            {"a{b=\"\\x\"} 1\n", "unknown escape"},
                            {"a 1 2 3\n", "after the timestamp"},
                            {"a one\n", "not a number"},
                            {"# TYPE a wrongtype\n", "unknown TYPE"},
                            {"a{b=\"1\" c=\"2\"} 1\n", "not separated"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        seen_t seen;
        char err[300] = "";
        assert_int_equal(s_parse(bad[i][0], false, &seen, err), -1);
        if (!strstr(err, bad[i][1])) {
            fail_msg("%s: %s", bad[i][0], err);
        }
    }
    char text[64] = "a 1\nb 2\nc 3\n";
    seen_t seen;
    char err[300];
    assert_int_equal(drv_prom_text_parse(text, strlen(text), false, 2, s_seen, &seen, err, sizeof err), -1);
    assert_non_null(strstr(err, "sample_limit"));
}

static void test_points(void **state)
{
    (void)state;
    char text[] = "# TYPE h histogram\n"
                  "h_bucket{le=\"1\",x=\"a\"} 2\nh_bucket{le=\"5\",x=\"a\"} 5\nh_bucket{le=\"+Inf\",x=\"a\"} 6\n"
                  "h_sum{x=\"a\"} 9\nh_count{x=\"a\"} 6\n"
                  "# TYPE c counter\nc_total 3\n";
    msgpack_zone zone;
    msgpack_zone_init(&zone, 4096);
    msgpack_object empty = {.type = MSGPACK_OBJECT_MAP};
    drv_prom_points_t *points = drv_prom_points_new(&zone, &empty, &empty, &empty, 1000);
    char err[300];
    assert_int_equal(drv_prom_text_parse(text, strlen(text), false, 100, drv_prom_points_add, points, err, sizeof err),
                     6);
    msgpack_object *records;
    assert_int_equal(drv_prom_points_records(points, &records), 2);
    char out[1024];
    msgpack_object_print_buffer(out, sizeof out, records[0]);
    assert_non_null(strstr(out, "\"bucket_counts\"=>[2, 3, 1]"));
    if (!strstr(out, "\"explicit_bounds\"=>[1.000000, 5.000000]")) {
        fail_msg("%s", out);
    }
    assert_non_null(strstr(out, "\"count\"=>6"));
    msgpack_object_print_buffer(out, sizeof out, records[1]);
    assert_non_null(strstr(out, "\"name\"=>\"c_total\""));
    assert_non_null(strstr(out, "\"is_monotonic\"=>true"));
    drv_prom_points_destroy(&points);
    msgpack_zone_destroy(&zone);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_format),
        cmocka_unit_test(test_openmetrics),
        cmocka_unit_test(test_refusals_name_the_line),
        cmocka_unit_test(test_points),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
