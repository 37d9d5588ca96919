/*  drv_http_rules: the HTTP admin's Host (421), Origin (403), token (401),
    Content-Type (415) and length (413) rules, judged from a request's head. */
#include "drv_http_rules.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

static int s_status(const drv_http_rules_t *rules, const char *method, const char *path, const char *host,
                    const char *origin, const char *type, const char *auth, int64_t length)
{
    drv_http_request_head_t head = {method, path, host, origin, type, auth, length, 1024};
    drv_http_verdict_t verdict;
    bool authorized;
    drv_http_rules_check(rules, &head, &verdict, &authorized);
    return verdict.status;
}

static void test_host_rules(void **state)
{
    (void)state;
    const char *extra[] = {"drover.example:9000", "10.0.0.7"};
    drv_http_rules_t *rules = drv_http_rules_new("127.0.0.1:8080", extra, 2, NULL);
    assert_int_equal(s_status(rules, "GET", "/status", "127.0.0.1:8080", NULL, NULL, NULL, -1), 0);
    assert_int_equal(s_status(rules, "GET", "/status", "LOCALHOST", NULL, NULL, NULL, -1), 0);
    assert_int_equal(s_status(rules, "GET", "/status", "[::1]:8080", NULL, NULL, NULL, -1), 0);
    assert_int_equal(s_status(rules, "GET", "/status", "drover.example", NULL, NULL, NULL, -1), 0);
    assert_int_equal(s_status(rules, "GET", "/status", "10.0.0.7:8080", NULL, NULL, NULL, -1), 0);
    //  DNS rebinding: a foreign name that resolves to us.
    assert_int_equal(s_status(rules, "GET", "/status", "evil.example:8080", NULL, NULL, NULL, -1), 421);
    assert_int_equal(s_status(rules, "GET", "/status", "localhost.evil.example", NULL, NULL, NULL, -1), 421);
    assert_int_equal(s_status(rules, "GET", "/status", "127.0.0.1:80x", NULL, NULL, NULL, -1), 421);
    assert_int_equal(s_status(rules, "GET", "/status", NULL, NULL, NULL, NULL, -1), 421);
    //  Probes and scrapers come by pod IP.
    assert_int_equal(s_status(rules, "GET", "/livez", "10.1.2.3:8080", NULL, NULL, NULL, -1), 0);
    assert_int_equal(s_status(rules, "GET", "/readyz", "10.1.2.3:8080", NULL, NULL, NULL, -1), 0);
    assert_int_equal(s_status(rules, "GET", "/metrics", "10.1.2.3:8080", NULL, NULL, NULL, -1), 0);
    drv_http_rules_destroy(&rules);
    assert_null(rules);
    const char *any[] = {"*"};
    rules = drv_http_rules_new("0.0.0.0:8080", any, 1, "0123456789abcdef");
    assert_int_equal(s_status(rules, "GET", "/status", "10.1.2.3:8080", NULL, NULL, NULL, -1), 0);
    //  A page served by the engine itself posts with its own origin ...
    assert_int_equal(s_status(rules, "POST", "/x", "10.1.2.3:8080", "http://10.1.2.3:8080", "application/json",
                              "Bearer 0123456789abcdef", 2),
                     0);
    //  ... another page may not.
    assert_int_equal(s_status(rules, "POST", "/x", "10.1.2.3:8080", "http://10.9.9.9:8080", "application/json",
                              "Bearer 0123456789abcdef", 2),
                     403);
    drv_http_rules_destroy(&rules);
}

static void test_mutations_need_json_same_origin_and_token(void **state)
{
    (void)state;
    drv_http_rules_t *rules = drv_http_rules_new("127.0.0.1:8080", NULL, 0, "0123456789abcdef");
    const char *auth = "Bearer 0123456789abcdef";
    const char *json = "application/json; charset=utf-8";
    assert_int_equal(s_status(rules, "POST", "/x", "localhost", NULL, json, auth, 2), 0);
    assert_int_equal(s_status(rules, "POST", "/x", "localhost", "http://localhost:8080", json, auth, 2), 0);
    //  A cross-site form post: text/plain, a foreign Origin, no token.
    assert_int_equal(s_status(rules, "POST", "/x", "localhost", NULL, "text/plain", auth, 2), 415);
    assert_int_equal(s_status(rules, "POST", "/x", "localhost", NULL, NULL, auth, -1), 415);
    assert_int_equal(s_status(rules, "POST", "/x", "localhost", NULL, "application/jsonx", auth, 2), 415);
    assert_int_equal(s_status(rules, "DELETE", "/x", "localhost", "http://evil.example", json, auth, -1), 403);
    assert_int_equal(s_status(rules, "PUT", "/x", "localhost", "null", json, auth, -1), 403);
    assert_int_equal(s_status(rules, "PUT", "/x", "localhost", NULL, json, "Bearer wrong", 2), 401);
    assert_int_equal(s_status(rules, "PUT", "/x", "localhost", NULL, json, NULL, 2), 401);
    //  The declared length is judged before a byte of the body is read.
    assert_int_equal(s_status(rules, "PUT", "/x", "localhost", NULL, json, auth, 1025), 413);
    //  Reads need none of it.
    assert_int_equal(s_status(rules, "GET", "/status", "localhost", "http://evil.example", NULL, NULL, -1), 0);
    drv_http_rules_destroy(&rules);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_rules),
        cmocka_unit_test(test_mutations_need_json_same_origin_and_token),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
