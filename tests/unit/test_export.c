/*  The HTTP exporters' batching and settlement, in one thread with no
    process: a DAG (receiver:zmq -> exporter:http) posts to the loop-driven
    HTTP server (common/drv_httpd) on a loopback socket, and the test turns
    both as an instance's loop would.
    - batch.max_records closes a batch; max_delay_ms closes a partial one;
    - the records an exporter holds are its own copies: batches that came
      later (the batch zone cleared under them) do not change them;
    - an input is settled only once every record of it is out: a 503 keeps
      it unsettled until the retry is answered 200. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "drv_dag.h"
#include "drv_nodes.h"
#include "observed.h"

#include "drover/drv_httpd.h"
#include "drover/drv_time.h"
#include "loopback.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <msgpack.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct {
    char bodies[8][512]; // what each POST carried
    int posts;
    int refuse; // answer this many first POSTs 503
} backend_t;

static void s_on_head(void *arg, drv_httpd_req_t *req)
{
    (void)arg;
    (void)req;
}

static void s_on_body(void *arg, drv_httpd_req_t *req)
{
    backend_t *self = arg;
    drv_http_upload_t *body = drv_httpd_body(req);
    bool refuse = self->refuse > 0;
    if (refuse) {
        self->refuse--;
    } else if (self->posts < 8) {
        snprintf(self->bodies[self->posts++], sizeof self->bodies[0], "%.*s", (int)body->len,
                 body->data ? body->data : "");
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    drv_httpd_answer(req, refuse ? 503 : 200, resp);
}

static drv_httpd_t *s_backend(backend_t *self, int *port)
{
    int fd = test_loopback_listen(port);
    assert_true(fd >= 0);
    drv_httpd_config_t config = {
        .name = "backend",
        .listen_fd = fd,
        .limits = {.per_address = 8, .total = 16, .request_ms = 5000, .idle_ms = 5000, .body_budget = 1 << 20},
        .idle_secs = 5,
        .max_body_bytes = 1 << 16,
        .on_head = s_on_head,
        .on_body = s_on_body,
        .arg = self,
    };
    char err[200];
    drv_httpd_t *httpd = drv_httpd_new(&config, err, sizeof err);
    assert_non_null(httpd);
    return httpd;
}

static drv_dag_t *s_dag(int port)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"nodes\":{\"in\":{\"type\":\"receiver:zmq\",\"config\":{\"endpoint\":\"tcp://127.0.0.1:1\"},"
             "\"to\":[\"out\"]},\"out\":{\"type\":\"exporter:http\",\"config\":{\"endpoint\":"
             "\"http://127.0.0.1:%d/in\",\"format\":\"ndjson\",\"compression\":\"none\","
             "\"batch\":{\"max_records\":2,\"max_delay_ms\":30},\"retry\":{\"initial_ms\":10,\"max_ms\":20}}}}}",
             port);
    json_t *spec = json_loads(json, 0, NULL);
    assert_non_null(spec);
    drv_dag_identity_t who = {"default", "p", 1, 0, NULL, 1, NULL};
    char err[300];
    drv_dag_t *dag = drv_dag_new(spec, &who, drv_nodes_kinds(), err, sizeof err);
    json_decref(spec);
    if (!dag) {
        fail_msg("dag: %s", err);
    }
    return dag;
}

//  One producer message of n records {"k": first..first+n-1, "s": "text-K"}.
static int s_ingest(drv_dag_t *dag, int first, int n)
{
    msgpack_sbuffer sbuf;
    msgpack_sbuffer_init(&sbuf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, (size_t)n);
    for (int i = first; i < first + n; i++) {
        char text[32];
        int len = snprintf(text, sizeof text, "text-%d", i);
        msgpack_pack_map(&pk, 2);
        msgpack_pack_str_with_body(&pk, "k", 1);
        msgpack_pack_int(&pk, i);
        msgpack_pack_str_with_body(&pk, "s", 1);
        msgpack_pack_str_with_body(&pk, text, (size_t)len);
    }
    char err[200];
    int rc = drv_dag_ingest(dag, "in", sbuf.data, sbuf.size, err, sizeof err);
    msgpack_sbuffer_destroy(&sbuf);
    return rc;
}

//  Turns the backend and the DAG's exporter as a loop would, until done() or 3 s.
static bool s_turn_until(drv_httpd_t *httpd, drv_dag_t *dag, bool (*done)(void *), void *arg)
{
    int64_t until = drv_time_mono_ms() + 3000;
    while (!done(arg) && drv_time_mono_ms() < until) {
        struct pollfd fds[9] = {{drv_httpd_fd(httpd), POLLIN, 0}};
        int dfds[8];
        size_t nodes[8];
        size_t n = drv_dag_fds(dag, dfds, nodes, 8);
        for (size_t i = 0; i < n; i++) {
            fds[1 + i] = (struct pollfd){dfds[i], POLLIN, 0};
        }
        poll(fds, 1 + n, 5);
        drv_httpd_run(httpd);
        for (size_t i = 0; i < n; i++) {
            if ((fds[1 + i].revents & POLLIN) || drv_dag_due(dag, nodes[i])) {
                drv_dag_readable(dag, nodes[i]);
            }
        }
    }
    return done(arg);
}

typedef struct {
    backend_t *backend;
    int posts;
    drv_dag_t *dag;
} want_t;

static bool s_posts(void *arg)
{
    want_t *w = arg;
    return w->backend->posts >= w->posts && drv_dag_settle(w->dag) >= drv_dag_input(w->dag);
}

static void test_batches_close_by_count_and_delay_and_hold_their_own_copies(void **state)
{
    (void)state;
    backend_t backend = {0};
    int port;
    drv_httpd_t *httpd = s_backend(&backend, &port);
    drv_dag_t *dag = s_dag(port);
    assert_int_equal(s_ingest(dag, 1, 1), 1); // an open batch of one ...
    assert_int_equal(s_ingest(dag, 2, 2), 2); // ... closed at two by max_records; one more opens the next
    assert_int_equal(s_ingest(dag, 4, 2), 2); // the batch zone was cleared under the held records twice
    want_t want = {&backend, 3, dag};
    assert_true(s_turn_until(httpd, dag, s_posts, &want)); // the third (one record) closes by max_delay_ms
    for (int i = 0; i < backend.posts; i++) {
        assert_true(test_unobserved(backend.bodies[i]));
    }
    assert_string_equal(backend.bodies[0], "{\"k\":1,\"s\":\"text-1\"}\n{\"k\":2,\"s\":\"text-2\"}\n");
    assert_string_equal(backend.bodies[1], "{\"k\":3,\"s\":\"text-3\"}\n{\"k\":4,\"s\":\"text-4\"}\n");
    assert_string_equal(backend.bodies[2], "{\"k\":5,\"s\":\"text-5\"}\n");
    int64_t in, out, errors;
    drv_dag_counters(dag, &in, &out, &errors);
    assert_int_equal(out, 5);
    assert_int_equal(errors, 0);
    drv_dag_destroy(&dag);
    drv_httpd_destroy(&httpd, 0);
}

static bool s_refused(void *arg)
{
    want_t *w = arg;
    return w->backend->refuse == 0;
}

static void test_an_input_settles_only_when_its_records_are_out(void **state)
{
    (void)state;
    backend_t backend = {.refuse = 1};
    int port;
    drv_httpd_t *httpd = s_backend(&backend, &port);
    drv_dag_t *dag = s_dag(port);
    assert_int_equal(s_ingest(dag, 1, 2), 2);
    int64_t input = drv_dag_input(dag);
    want_t want = {&backend, 1, dag};
    assert_true(s_turn_until(httpd, dag, s_refused, &want)); // the first try is answered 503
    assert_true(drv_dag_settle(dag) < input);                // held for its retry: not settled
    assert_int_equal(backend.posts, 0);
    assert_true(s_turn_until(httpd, dag, s_posts, &want)); // the retry is taken
    assert_true(drv_dag_settle(dag) >= input);
    for (int i = 0; i < backend.posts; i++) {
        assert_true(test_unobserved(backend.bodies[i]));
    }
    assert_string_equal(backend.bodies[0], "{\"k\":1,\"s\":\"text-1\"}\n{\"k\":2,\"s\":\"text-2\"}\n");
    drv_dag_destroy(&dag);
    drv_httpd_destroy(&httpd, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batches_close_by_count_and_delay_and_hold_their_own_copies),
        cmocka_unit_test(test_an_input_settles_only_when_its_records_are_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
