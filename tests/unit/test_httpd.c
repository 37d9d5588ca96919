/*  drv_httpd, the loop-driven HTTP server, through a real loopback socket:
    a request left unanswered by on_body is suspended (nothing is sent, the
    loop is not blocked) and answered from outside a callback later; the
    resume makes the server's next timeout 0, so a loop never sleeps on it;
    a streaming answer parks when nothing is queued and is woken. */
#include "drover/drv_httpd.h"
#include "drover/drv_time.h"
#include "loopback.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct {
    drv_httpd_req_t *held;   // the request on_body left unanswered
    drv_httpd_req_t *stream; // the streaming one
    int done;                // requests over
    const char *chunk;       // the stream's next bytes (NULL: none yet)
    bool ended;
} server_t;

static void s_on_head(void *arg, drv_httpd_req_t *req)
{
    (void)arg;
    (void)req;
}

static ssize_t s_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    drv_httpd_req_t *req = cls;
    server_t *self = drv_httpd_user(req);
    if (self->ended) {
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (!self->chunk) {
        drv_httpd_park(req);
        return 0;
    }
    size_t n = strlen(self->chunk) < max ? strlen(self->chunk) : max;
    memcpy(buf, self->chunk, n);
    self->chunk = NULL;
    return (ssize_t)n;
}

static void s_on_body(void *arg, drv_httpd_req_t *req)
{
    server_t *self = arg;
    drv_httpd_set_user(req, self);
    if (!strcmp(drv_httpd_url(req), "/stream")) {
        self->stream = req;
        drv_httpd_streaming(req);
        drv_httpd_answer(req, 200, MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, s_read, req, NULL));
    } else {
        self->held = req; // answered later
    }
}

static void s_on_done(void *arg, drv_httpd_req_t *req)
{
    server_t *self = arg;
    if (self->held == req) {
        self->held = NULL;
    }
    if (self->stream == req) {
        self->stream = NULL;
    }
    self->done++;
}

//  Runs the server as a loop would for ms, returning early once the client has bytes to read.
static void s_turn(drv_httpd_t *httpd, int client, int64_t ms)
{
    int64_t until = drv_time_mono_ms() + ms;
    while (drv_time_mono_ms() < until) {
        struct pollfd fds[2] = {{drv_httpd_fd(httpd), POLLIN, 0}, {client, POLLIN, 0}};
        int64_t wait = drv_httpd_timeout_ms(httpd);
        wait = wait < 0 || wait > 10 ? 10 : wait;
        poll(fds, 2, (int)wait);
        drv_httpd_run(httpd);
        struct pollfd peek = {client, POLLIN, 0};
        if (poll(&peek, 1, 0) > 0) {
            return;
        }
    }
}

static drv_httpd_t *s_server(server_t *self, int *port)
{
    int fd = test_loopback_listen(port);
    assert_true(fd >= 0);
    drv_httpd_config_t config = {
        .name = "test",
        .listen_fd = fd,
        .limits = {.per_address = 8, .total = 16, .request_ms = 5000, .idle_ms = 5000, .body_budget = 1 << 20},
        .idle_secs = 5,
        .max_body_bytes = 1024,
        .on_head = s_on_head,
        .on_body = s_on_body,
        .on_done = s_on_done,
        .arg = self,
    };
    char err[200];
    drv_httpd_t *httpd = drv_httpd_new(&config, err, sizeof err);
    assert_non_null(httpd);
    return httpd;
}

static int s_client(int port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {
        .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    char request[200];
    int n = snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
    assert_int_equal(write(fd, request, (size_t)n), n);
    return fd;
}

static bool s_readable(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) > 0;
}

static void test_an_unanswered_request_waits_suspended_and_is_answered_later(void **state)
{
    (void)state;
    server_t self = {0};
    int port;
    drv_httpd_t *httpd = s_server(&self, &port);
    int client = s_client(port, "/wait");
    s_turn(httpd, client, 300);
    assert_non_null(self.held);       // on_body ran and left it
    assert_false(s_readable(client)); // nothing sent meanwhile
    struct MHD_Response *resp = MHD_create_response_from_buffer(2, "ok", MHD_RESPMEM_PERSISTENT);
    drv_httpd_answer(self.held, 200, resp);           // from the loop, outside any callback
    assert_int_equal(drv_httpd_timeout_ms(httpd), 0); // resumed: the loop must run it now
    s_turn(httpd, client, 2000);
    char buf[512] = "";
    assert_true(read(client, buf, sizeof buf - 1) > 0);
    assert_non_null(strstr(buf, "HTTP/1.1 200"));
    assert_non_null(strstr(buf, "\r\n\r\nok"));
    close(client);
    s_turn(httpd, client, 100);
    drv_httpd_destroy(&httpd, 0);
    assert_int_equal(self.done, 1);
}

//  Reads what the client has until want shows up (or 2 s pass).
static bool s_read_until(drv_httpd_t *httpd, int client, char *buf, size_t cap, const char *want)
{
    size_t len = strlen(buf);
    int64_t until = drv_time_mono_ms() + 2000;
    while (!strstr(buf, want) && drv_time_mono_ms() < until) {
        s_turn(httpd, client, 50);
        if (s_readable(client)) {
            ssize_t n = read(client, buf + len, cap - len - 1);
            if (n <= 0) {
                break;
            }
            len += (size_t)n;
            buf[len] = 0;
        }
    }
    return strstr(buf, want) != NULL;
}

static void test_a_stream_parks_until_woken(void **state)
{
    (void)state;
    server_t self = {0};
    int port;
    drv_httpd_t *httpd = s_server(&self, &port);
    int client = s_client(port, "/stream");
    char buf[4096] = "";
    assert_true(s_read_until(httpd, client, buf, sizeof buf, "\r\n\r\n")); // the head
    assert_non_null(strstr(buf, "HTTP/1.1 200"));
    assert_non_null(self.stream);
    s_turn(httpd, client, 200); // parked: nothing more comes, and the loop is free
    assert_false(s_readable(client));
    self.chunk = "hello";
    drv_httpd_wake(self.stream);
    assert_int_equal(drv_httpd_timeout_ms(httpd), 0);
    assert_true(s_read_until(httpd, client, buf, sizeof buf, "hello"));
    self.ended = true;
    drv_httpd_wake(self.stream);
    assert_true(s_read_until(httpd, client, buf, sizeof buf, "\r\n0\r\n\r\n")); // the chunked body's end
    close(client);
    s_turn(httpd, client, 100);
    drv_httpd_destroy(&httpd, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_unanswered_request_waits_suspended_and_is_answered_later),
        cmocka_unit_test(test_a_stream_parks_until_woken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
