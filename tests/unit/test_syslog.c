/*  The syslog parser: RFC 5424 and RFC 3164 lines as util-linux logger
    writes them (copied from its output, and sent by logger itself to a UDP
    socket here), the record each becomes, and raw lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "drv_syslog.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static msgpack_sbuffer s_buf;
static msgpack_unpacked s_record;

//  Parses and packs line; the record is s_record.data (a map).
static const msgpack_object *s_record_of(const char *line, int64_t now_ms)
{
    drv_syslog_msg_t msg;
    drv_syslog_parse(line, strlen(line), now_ms, &msg);
    msgpack_sbuffer_clear(&s_buf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &s_buf, msgpack_sbuffer_write);
    assert_int_equal(drv_syslog_pack(&msg, &pk), 0);
    msgpack_unpacked_destroy(&s_record);
    msgpack_unpacked_init(&s_record);
    assert_int_equal(msgpack_unpack_next(&s_record, s_buf.data, s_buf.size, NULL), MSGPACK_UNPACK_SUCCESS);
    assert_int_equal(s_record.data.type, MSGPACK_OBJECT_MAP);
    return &s_record.data;
}

static const msgpack_object *s_get(const msgpack_object *map, const char *key)
{
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->via.str.size == strlen(key) && !memcmp(k->via.str.ptr, key, k->via.str.size)) {
            return &map->via.map.ptr[i].val;
        }
    }
    fail_msg("no key %s", key);
    return NULL;
}

static void s_str_is(const msgpack_object *map, const char *key, const char *expected)
{
    const msgpack_object *v = s_get(map, key);
    if (!expected) {
        assert_int_equal(v->type, MSGPACK_OBJECT_NIL);
        return;
    }
    assert_int_equal(v->type, MSGPACK_OBJECT_STR);
    char got[512];
    snprintf(got, sizeof got, "%.*s", (int)v->via.str.size, v->via.str.ptr);
    assert_string_equal(got, expected);
}

static void s_int_is(const msgpack_object *map, const char *key, int64_t expected)
{
    const msgpack_object *v = s_get(map, key);
    assert_int_equal(v->type, MSGPACK_OBJECT_POSITIVE_INTEGER);
    assert_int_equal(v->via.u64, expected);
}

static int s_setup(void **state)
{
    (void)state;
    msgpack_sbuffer_init(&s_buf);
    msgpack_unpacked_init(&s_record);
    return 0;
}

static int s_teardown(void **state)
{
    (void)state;
    msgpack_sbuffer_destroy(&s_buf);
    msgpack_unpacked_destroy(&s_record);
    return 0;
}

static const int64_t NOW_MS = 1795440000000LL; // 2026-11-23T13:20:00Z

static void test_rfc5424_from_logger(void **state)
{
    (void)state;
    const msgpack_object *r = s_record_of("<13>1 2026-11-23T13:34:51.004716+00:00 vm myapp 15992 ID47 "
                                          "[timeQuality tzKnown=\"1\" isSynced=\"0\"]"
                                          "[zoo@123 tiger=\"hungry\" zebra=\"str\\\"ipes\"] hello world\n",
                                          NOW_MS);
    s_int_is(r, "facility", 1);
    s_int_is(r, "severity", 5);
    s_str_is(r, "timestamp", "2026-11-23T13:34:51.004716+00:00");
    s_str_is(r, "hostname", "vm");
    s_str_is(r, "app_name", "myapp");
    s_str_is(r, "procid", "15992");
    s_str_is(r, "msgid", "ID47");
    s_str_is(r, "message", "hello world");
    s_str_is(r, "format", "rfc5424");
    const msgpack_object *sd = s_get(r, "structured_data");
    assert_int_equal(sd->type, MSGPACK_OBJECT_MAP);
    assert_int_equal(sd->via.map.size, 2);
    s_str_is(s_get(sd, "timeQuality"), "isSynced", "0");
    s_str_is(s_get(sd, "zoo@123"), "zebra", "str\"ipes"); // escapes undone
    s_str_is(s_get(sd, "zoo@123"), "tiger", "hungry");
}

static void test_rfc5424_nil_values_and_no_message(void **state)
{
    (void)state;
    const msgpack_object *r = s_record_of("<165>1 - - - - - -", NOW_MS);
    s_int_is(r, "facility", 20);
    s_int_is(r, "severity", 5);
    s_str_is(r, "timestamp", NULL);
    s_str_is(r, "hostname", NULL);
    s_str_is(r, "app_name", NULL);
    s_str_is(r, "message", NULL);
    assert_int_equal(s_get(r, "structured_data")->type, MSGPACK_OBJECT_NIL);
    s_str_is(r, "format", "rfc5424");
    //  A BOM before the message says UTF-8 and is not part of it.
    r = s_record_of("<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \xEF\xBB\xBF'su root' failed",
                    NOW_MS);
    s_str_is(r, "message", "'su root' failed");
    s_str_is(r, "hostname", "mymachine.example.com");
}

static void test_rfc5424_repeated_sd_ids_and_params_keep_the_first(void **state)
{
    (void)state;
    const msgpack_object *r = s_record_of("<13>1 - h a - - [x a=\"1\" a=\"2\" b=\"]\"][x c=\"3\"] m", NOW_MS);
    const msgpack_object *sd = s_get(r, "structured_data");
    assert_int_equal(sd->via.map.size, 1);
    const msgpack_object *x = s_get(sd, "x");
    assert_int_equal(x->via.map.size, 2);
    s_str_is(x, "a", "1");
    s_str_is(x, "b", "]");
}

static void test_rfc3164_from_logger(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1);
    tzset();
    const msgpack_object *r = s_record_of("<13>Nov 23 13:34:50 vm myapp: hello world", NOW_MS);
    s_int_is(r, "facility", 1);
    s_int_is(r, "severity", 5);
    s_str_is(r, "timestamp", "2026-11-23T13:34:50+00:00");
    s_str_is(r, "hostname", "vm");
    s_str_is(r, "app_name", "myapp");
    s_str_is(r, "procid", NULL);
    s_str_is(r, "message", "hello world");
    s_str_is(r, "format", "rfc3164");
    r = s_record_of("<86>Nov  3 01:02:03 host sshd[4242]: Accepted publickey", NOW_MS);
    s_str_is(r, "timestamp", "2026-11-03T01:02:03+00:00");
    s_str_is(r, "app_name", "sshd");
    s_str_is(r, "procid", "4242");
    s_str_is(r, "message", "Accepted publickey");
    //  December's line read in January belongs to the year before.
    r = s_record_of("<13>Dec 31 23:59:59 host app: late", 1798761600000LL /* 2027-01-01T00:00:00Z */);
    s_str_is(r, "timestamp", "2026-12-31T23:59:59+00:00");
    //  No tag: everything after the host is the message.
    r = s_record_of("<13>Nov 23 13:34:50 host just words here", NOW_MS);
    s_str_is(r, "app_name", NULL);
    s_str_is(r, "message", "just words here");
}

static void test_neither_format_is_raw(void **state)
{
    (void)state;
    const char *lines[] = {"no priority at all",
                           "<999>1 - - - - - - x",
                           "<13>1 not-a-time h a - - - m",
                           "<13>Foo 23 13:34:50 h a: m",
                           "<013>1 - - - - - -",
                           "<13>1 - h a - - [broken m",
                           "<13"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        const msgpack_object *r = s_record_of(lines[i], NOW_MS);
        s_str_is(r, "format", "raw");
        s_str_is(r, "message", lines[i]);
        assert_int_equal(s_get(r, "facility")->type, MSGPACK_OBJECT_NIL);
        s_str_is(r, "hostname", NULL);
    }
    s_str_is(s_record_of("\r\n", NOW_MS), "message", NULL);
}

static void test_bytes_that_are_not_utf8_are_replaced(void **state)
{
    (void)state;
    const msgpack_object *r = s_record_of("<13>1 - h a - - - caf\xE9 \xFF", NOW_MS);
    s_str_is(r, "message", "caf\xEF\xBF\xBD \xEF\xBF\xBD");
}

//  util-linux logger itself, over UDP, in both formats.
static void test_lines_sent_by_logger(void **state)
{
    (void)state;
    if (access("/usr/bin/logger", X_OK) != 0) {
        skip();
    }
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    socklen_t alen = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &alen);
    struct timeval timeout = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    const char *formats[] = {"--rfc5424", "--rfc3164"};
    const char *names[] = {"rfc5424", "rfc3164"};
    for (int i = 0; i < 2; i++) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "logger -d -n 127.0.0.1 -P %d -t drvtest -p local3.warning %s --id=77 'from logger'",
                 ntohs(addr.sin_port), formats[i]);
        assert_int_equal(system(cmd), 0);
        char datagram[2048];
        ssize_t n = recv(fd, datagram, sizeof datagram - 1, 0);
        assert_true(n > 0);
        datagram[n] = 0;
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        const msgpack_object *r = s_record_of(datagram, (int64_t)now.tv_sec * 1000);
        s_str_is(r, "format", names[i]);
        s_int_is(r, "facility", 19); // local3
        s_int_is(r, "severity", 4);  // warning
        s_str_is(r, "app_name", "drvtest");
        s_str_is(r, "procid", "77");
        s_str_is(r, "message", "from logger");
        assert_int_equal(s_get(r, "timestamp")->type, MSGPACK_OBJECT_STR);
    }
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rfc5424_from_logger, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_rfc5424_nil_values_and_no_message, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_rfc5424_repeated_sd_ids_and_params_keep_the_first, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_rfc3164_from_logger, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_neither_format_is_raw, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_bytes_that_are_not_utf8_are_replaced, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_lines_sent_by_logger, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
