/*  drv_conn_policy: the connection rules every listener shares (issue 23),
    without a socket: fds are socketpairs, so a cut (shutdown) is seen as the
    peer reading the end of the stream. */
#include "drover/drv_conn_policy.h"

#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct {
    int ours, theirs;
} pair_t;

static pair_t s_pair(void)
{
    int fds[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    return (pair_t){fds[0], fds[1]};
}

//  True when the policy shut our end down (the peer reads 0 bytes).
static bool s_cut(pair_t p)
{
    char byte;
    return recv(p.theirs, &byte, 1, MSG_DONTWAIT) == 0;
}

static struct sockaddr_in s_addr(int last)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(0x7f000000u | (unsigned)last);
    return a;
}

static const drv_conn_limits_t limits = {
    .per_address = 2, .total = 3, .request_ms = 1000, .idle_ms = 5000, .body_budget = 100};

static void test_a_newcomer_past_the_address_cap_cuts_that_addresses_oldest_waiting(void **state)
{
    (void)state;
    drv_conn_policy_t *policy = drv_conn_policy_new(&limits, "test");
    struct sockaddr_in a = s_addr(2), b = s_addr(3);
    pair_t p[4] = {s_pair(), s_pair(), s_pair(), s_pair()};
    drv_conn_t *c0 = drv_conn_policy_open(policy, p[0].ours, (struct sockaddr *)&a, 0);
    drv_conn_policy_open(policy, p[1].ours, (struct sockaddr *)&b, 0);
    drv_conn_policy_engine(policy, c0); // the engine holds a's first: not evictable
    drv_conn_policy_open(policy, p[2].ours, (struct sockaddr *)&a, 0);
    drv_conn_policy_open(policy, p[3].ours, (struct sockaddr *)&a, 0); // a's third
    assert_false(s_cut(p[0]));
    assert_false(s_cut(p[1]));
    assert_true(s_cut(p[2])); // a's oldest still on the client's clock
    assert_false(s_cut(p[3]));
    assert_int_equal(drv_conn_policy_cut_count(policy), 1);
    drv_conn_policy_destroy(&policy);
    for (int i = 0; i < 4; i++) {
        close(p[i].ours);
        close(p[i].theirs);
    }
}

static void test_past_the_total_a_stream_goes_before_anything_the_engine_holds(void **state)
{
    (void)state;
    drv_conn_limits_t wide = limits;
    wide.per_address = 10;
    drv_conn_policy_t *policy = drv_conn_policy_new(&wide, "test");
    struct sockaddr_in a = s_addr(2);
    pair_t p[4] = {s_pair(), s_pair(), s_pair(), s_pair()};
    drv_conn_t *held = drv_conn_policy_open(policy, p[0].ours, (struct sockaddr *)&a, 0);
    drv_conn_t *stream = drv_conn_policy_open(policy, p[1].ours, (struct sockaddr *)&a, 0);
    drv_conn_t *held2 = drv_conn_policy_open(policy, p[2].ours, (struct sockaddr *)&a, 0);
    drv_conn_policy_engine(policy, held);
    drv_conn_policy_stream(policy, stream);
    drv_conn_policy_engine(policy, held2);
    drv_conn_policy_open(policy, p[3].ours, (struct sockaddr *)&a, 0); // a probe
    assert_false(s_cut(p[0]));
    assert_true(s_cut(p[1]));
    assert_false(s_cut(p[2]));
    assert_false(s_cut(p[3]));
    drv_conn_policy_destroy(&policy);
    for (int i = 0; i < 4; i++) {
        close(p[i].ours);
        close(p[i].theirs);
    }
}

static void test_deadlines_cut_the_slow_and_the_silent_not_what_the_engine_holds(void **state)
{
    (void)state;
    drv_conn_policy_t *policy = drv_conn_policy_new(&limits, "test");
    pair_t p[3] = {s_pair(), s_pair(), s_pair()};
    drv_conn_t *slow = drv_conn_policy_open(policy, p[0].ours, NULL, 0);
    drv_conn_t *idle = drv_conn_policy_open(policy, p[1].ours, NULL, 0);
    drv_conn_t *held = drv_conn_policy_open(policy, p[2].ours, NULL, 0);
    (void)slow;
    drv_conn_policy_idle(policy, idle, 0);
    drv_conn_policy_engine(policy, held);
    assert_int_equal(drv_conn_policy_expire(policy, 500), 500); // the request deadline is next
    assert_int_equal(drv_conn_policy_expire(policy, 1000), 4000);
    assert_true(s_cut(p[0]));
    assert_false(s_cut(p[1]));
    assert_int_equal(drv_conn_policy_expire(policy, 5000), -1);
    assert_true(s_cut(p[1]));
    assert_false(s_cut(p[2]));
    assert_true(drv_conn_policy_was_cut(slow));
    drv_conn_policy_close(policy, slow);
    assert_int_equal(drv_conn_policy_open_count(policy), 2);
    drv_conn_policy_destroy(&policy);
    for (int i = 0; i < 3; i++) {
        close(p[i].ours);
        close(p[i].theirs);
    }
}

static void test_the_body_budget_holds_what_arrived(void **state)
{
    (void)state;
    drv_conn_policy_t *policy = drv_conn_policy_new(&limits, "test");
    assert_true(drv_conn_policy_body_fits(policy, 100));
    assert_true(drv_conn_policy_take_body(policy, NULL, 60));
    assert_false(drv_conn_policy_body_fits(policy, 41));
    assert_false(drv_conn_policy_take_body(policy, NULL, 41));
    assert_true(drv_conn_policy_take_body(policy, NULL, 40));
    drv_conn_policy_give_body(policy, NULL, 60);
    assert_int_equal(drv_conn_policy_body_used(policy), 40);
    drv_conn_policy_give_body(policy, NULL, 1000); // never below zero
    assert_int_equal(drv_conn_policy_body_used(policy), 0);
    drv_conn_policy_destroy(&policy);
    drv_conn_policy_destroy(&policy); // safe twice
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_newcomer_past_the_address_cap_cuts_that_addresses_oldest_waiting),
        cmocka_unit_test(test_past_the_total_a_stream_goes_before_anything_the_engine_holds),
        cmocka_unit_test(test_deadlines_cut_the_slow_and_the_silent_not_what_the_engine_holds),
        cmocka_unit_test(test_the_body_budget_holds_what_arrived),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
