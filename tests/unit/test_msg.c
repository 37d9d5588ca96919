/*  Control protocol codec: every message round-trips; malformed input is
    refused with -2 and a reason, never a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "drover/drv_mpjson.h"
#include "drover/drv_msg.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Fills every field the type allows, so the round trip covers all of them.
static void s_fill(drv_msg_t *msg, drv_msg_type_t type)
{
    drv_msg_init(msg, type);
    drv_msg_set_str(msg, DRV_F_ROLE, "worker");
    drv_msg_set_str(msg, DRV_F_INSTANCE, "default/p@3#1");
    drv_msg_set_str(msg, DRV_F_PIPELINE, "default:p");
    drv_msg_set_str(msg, DRV_F_NODE, "in");
    drv_msg_set_str(msg, DRV_F_ENDPOINT, "tcp://127.0.0.1:1");
    drv_msg_set_str(msg, DRV_F_REASON, "because");
    drv_msg_set_str(msg, DRV_F_DATA_ENDPOINT, "ipc:///tmp/x");
    drv_msg_set_int(msg, DRV_F_PID, 4242);
    drv_msg_set_int(msg, DRV_F_GENERATION, 3);
    drv_msg_set_int(msg, DRV_F_CORE, 1);
    drv_msg_set_int(msg, DRV_F_HEARTBEAT_MS, 1000);
    drv_msg_set_int(msg, DRV_F_CREDIT_WINDOW, 16);
    drv_msg_set_int(msg, DRV_F_N, -5);
    drv_msg_set_int(msg, DRV_F_RECORDS_IN, 1LL << 40);
    drv_msg_set_int(msg, DRV_F_RECORDS_OUT, 7);
    drv_msg_set_int(msg, DRV_F_ERRORS, 1);
    drv_msg_set_int(msg, DRV_F_BATCHES, 9);
    drv_msg_set_bool(msg, DRV_F_OK, true);
    drv_msg_set_bool(msg, DRV_F_RESET, true);
    drv_msg_set_bool(msg, DRV_F_SYNCED, true);
    drv_msg_set_int(msg, DRV_F_SYNC_ID, 12);
    json_t *spec = json_pack("{s:{s:i}, s:[s, f, n, b]}", "cores", "count", 2, "list", "x", 1.5, 1);
    drv_msg_set_json(msg, DRV_F_SPEC, spec);
    drv_msg_set_json(msg, DRV_F_RECEIVERS, spec);
    json_decref(spec);
    json_t *nodes = json_pack("{s:[i,i,i,i]}", "script", 10, 8, 1, 1);
    drv_msg_set_json(msg, DRV_F_NODES, nodes);
    json_decref(nodes);
}

static void test_every_message_round_trips(void **state)
{
    (void)state;
    for (int type = 0; type < DRV_MSG_TYPE_COUNT; type++) {
        drv_msg_t msg, back;
        s_fill(&msg, (drv_msg_type_t)type);
        char *data;
        size_t size;
        assert_int_equal(drv_msg_encode(&msg, &data, &size), 0);
        char err[200];
        assert_int_equal(drv_msg_decode(&back, data, size, err, sizeof err), 0);
        assert_int_equal(back.type, type);
        //  Re-encoding what was decoded gives the same bytes: nothing lost.
        char *again;
        size_t again_size;
        assert_int_equal(drv_msg_encode(&back, &again, &again_size), 0);
        assert_int_equal(again_size, size);
        assert_memory_equal(again, data, size);
        if (drv_msg_has(&back, DRV_F_INSTANCE)) {
            assert_string_equal(back.instance, "default/p@3#1");
        }
        if (drv_msg_has(&back, DRV_F_SPEC)) {
            assert_true(json_equal(back.spec, msg.spec));
        }
        free(again);
        free(data);
        drv_msg_clear(&msg);
        drv_msg_clear(&back);
    }
}

//  For every message type: each of its fields, dropped from a full message,
//  is either optional (still decodes) or required (refused, naming it).
static void test_every_message_refuses_each_missing_required_field(void **state)
{
    (void)state;
    static const char *names[] = {"role",         "instance",      "pipeline",   "node",       "endpoint",
                                  "reason",       "data_endpoint", "pid",        "generation", "core",
                                  "heartbeat_ms", "credit_window", "n",          "records_in", "records_out",
                                  "errors",       "batches",       "ok",         "reset",      "spec",
                                  "receivers",    "synced",        "nodes",      "buffer_dir", "buffer",
                                  "acked",        "ring_fd",       "ring_bytes", "run_dir",    "sync_id"};
    _Static_assert(sizeof names / sizeof *names == DRV_F_COUNT, "one name per field");
    int refusals = 0;
    for (int type = 0; type < DRV_MSG_TYPE_COUNT; type++) {
        drv_msg_t full;
        s_fill(&full, (drv_msg_type_t)type);
        char *data;
        size_t size;
        assert_int_equal(drv_msg_encode(&full, &data, &size), 0);
        char err[200];
        json_t *doc = drv_mpjson_decode(data, size, err, sizeof err);
        assert_non_null(doc);
        free(data);
        for (int f = 0; f < DRV_F_COUNT; f++) {
            if (!json_object_get(doc, names[f])) {
                continue;
            }
            json_t *partial = json_deep_copy(doc);
            json_object_del(partial, names[f]);
            assert_int_equal(drv_mpjson_encode(partial, &data, &size), 0);
            drv_msg_t back;
            int rc = drv_msg_decode(&back, data, size, err, sizeof err);
            if (rc != 0) {
                char expected[120];
                snprintf(expected, sizeof expected, "%s: missing field %s", drv_msg_type_name(type), names[f]);
                assert_string_equal(err, expected);
                refusals++;
            }
            drv_msg_clear(&back);
            free(data);
            json_decref(partial);
        }
        json_decref(doc);
        drv_msg_clear(&full);
    }
    assert_true(refusals >= 30); // the table's required fields, all enforced
}

static void test_missing_required_field_is_not_encoded(void **state)
{
    (void)state;
    drv_msg_t msg;
    drv_msg_init(&msg, DRV_MSG_READY); // needs instance
    char *data;
    size_t size;
    assert_int_equal(drv_msg_encode(&msg, &data, &size), -1);
    drv_msg_clear(&msg);
}

static int s_decode_map(const char *json, char *err, size_t errlen)
{
    json_t *value = json_loads(json, 0, NULL);
    assert_non_null(value);
    char *data;
    size_t size;
    assert_int_equal(drv_mpjson_encode(value, &data, &size), 0);
    drv_msg_t msg;
    int rc = drv_msg_decode(&msg, data, size, err, errlen);
    drv_msg_clear(&msg);
    free(data);
    json_decref(value);
    return rc;
}

static void test_malformed_messages_are_refused(void **state)
{
    (void)state;
    char err[200];
    drv_msg_t msg;
    const char garbage[] = "\xc1\xc1\xc1";
    assert_int_equal(drv_msg_decode(&msg, garbage, 3, err, sizeof err), -2);
    assert_string_equal(err, "malformed msgpack: byte 0xc1 at offset 0");
    const char truncated[] = "\x83\xa1v\x01";
    assert_int_equal(drv_msg_decode(&msg, truncated, 4, err, sizeof err), -2);
    assert_string_equal(err, "container at offset 1 claims 6 items in 3 bytes");
    assert_int_equal(drv_msg_decode(&msg, "", 0, err, sizeof err), -2);
    assert_int_equal(s_decode_map("[1,2]", err, sizeof err), -2);
    assert_string_equal(err, "message is not a map");
    assert_int_equal(s_decode_map("{\"type\":\"ready\",\"instance\":\"x\"}", err, sizeof err), -2);
    assert_non_null(strstr(err, "version"));
    assert_int_equal(s_decode_map("{\"v\":2,\"type\":\"ready\",\"instance\":\"x\"}", err, sizeof err), -2);
    assert_int_equal(s_decode_map("{\"v\":1,\"type\":\"bogus\"}", err, sizeof err), -2);
    assert_string_equal(err, "missing or unknown message type");
    assert_int_equal(s_decode_map("{\"v\":1,\"type\":\"ready\"}", err, sizeof err), -2);
    assert_string_equal(err, "ready: missing field instance");
    assert_int_equal(s_decode_map("{\"v\":1,\"type\":\"ready\",\"instance\":7}", err, sizeof err), -2);
    assert_string_equal(err, "field instance: expected a string");
    assert_int_equal(s_decode_map("{\"v\":1,\"type\":\"credit\",\"n\":\"x\",\"reset\":true}", err, sizeof err), -2);
    assert_int_equal(s_decode_map("{\"v\":1,\"type\":\"credit\",\"n\":1,\"reset\":1}", err, sizeof err), -2);
    //  Unknown keys are ignored, so fields can be added without a new version.
    assert_int_equal(s_decode_map("{\"v\":1,\"type\":\"ready\",\"instance\":\"x\",\"new\":1}", err, sizeof err), 0);
    //  Trailing bytes after a valid message.
    json_t *value = json_pack("{s:i, s:s}", "v", 1, "type", "sync");
    char *data;
    size_t size;
    drv_mpjson_encode(value, &data, &size);
    data = realloc(data, size + 1);
    data[size] = 0;
    assert_int_equal(drv_msg_decode(&msg, data, size + 1, err, sizeof err), -2);
    assert_string_equal(err, "1 trailing bytes after the message");
    free(data);
    json_decref(value);
}

static void test_random_bytes_never_crash(void **state)
{
    (void)state;
    srand(7);
    char buf[64];
    char err[200];
    for (int i = 0; i < 20000; i++) {
        size_t size = (size_t)(rand() % (int)sizeof buf);
        for (size_t k = 0; k < size; k++) {
            buf[k] = (char)rand();
        }
        drv_msg_t msg;
        int rc = drv_msg_decode(&msg, buf, size, err, sizeof err);
        assert_true(rc == 0 || rc == -2);
        drv_msg_clear(&msg);
    }
}

static void test_hostile_counts_are_refused_without_allocating(void **state)
{
    (void)state;
    char err[200];
    drv_msg_t msg;
    //  array32 claiming 4 billion items, map32 claiming as many pairs, a str32 longer than the frame.
    assert_int_equal(drv_msg_decode(&msg, "\xdd\xff\xff\xff\xff", 5, err, sizeof err), -2);
    assert_non_null(strstr(err, "claims 4294967295 items in 0 bytes"));
    assert_int_equal(drv_msg_decode(&msg, "\xdf\xff\xff\xff\xff\x01", 6, err, sizeof err), -2);
    assert_int_equal(drv_msg_decode(&msg,
                                    "\xdb\xff\xff\xff\xff"
                                    "ab",
                                    7, err, sizeof err),
                     -2);
    assert_non_null(strstr(err, "truncated"));
    char deep[40];
    memset(deep, 0x91, sizeof deep);
    deep[sizeof deep - 1] = 0x01;
    assert_int_equal(drv_msg_decode(&msg, deep, sizeof deep, err, sizeof err), -2);
    assert_non_null(strstr(err, "nested deeper than 32 levels"));
}

static void test_mpjson_round_trip_and_depth_limit(void **state)
{
    (void)state;
    json_t *value = json_loads("{\"a\":[1,-2,3.5,\"x\",null,true,{\"b\":{}}]}", 0, NULL);
    char *data;
    size_t size;
    assert_int_equal(drv_mpjson_encode(value, &data, &size), 0);
    char err[200];
    json_t *back = drv_mpjson_decode(data, size, err, sizeof err);
    assert_non_null(back);
    assert_true(json_equal(value, back));
    json_decref(back);
    json_decref(value);
    free(data);
    //  Deeply nested arrays: refused, not a stack overflow.
    char deep[200];
    memset(deep, 0x91, sizeof deep); // fixarray of 1, nested
    deep[sizeof deep - 1] = 0x01;
    assert_null(drv_mpjson_decode(deep, sizeof deep, err, sizeof err));
}

//  What a spec over zmq may hold is what JSON can (docs/security.md): each
//  refusal names the field.
static void test_mpjson_refuses_what_json_cannot_hold(void **state)
{
    (void)state;
    char err[300];
    //  {"a": {"b": bin "x"}}
    const char with_bin[] = "\x81\xa1"
                            "a"
                            "\x81\xa1"
                            "b"
                            "\xc4\x01x";
    assert_null(drv_mpjson_decode(with_bin, sizeof with_bin - 1, err, sizeof err));
    assert_string_equal(err, "a.b: binary values are not allowed (send a string)");
    //  {"a": ["ok", "\xff"]}
    const char bad_utf8[] = "\x81\xa1"
                            "a"
                            "\x92\xa2"
                            "ok"
                            "\xa1\xff";
    assert_null(drv_mpjson_decode(bad_utf8, sizeof bad_utf8 - 1, err, sizeof err));
    assert_string_equal(err, "a[1]: string is not valid UTF-8 without NUL");
    //  {"a": "x\0y"}
    const char nul[] = "\x81\xa1"
                       "a"
                       "\xa3x\x00y";
    assert_null(drv_mpjson_decode(nul, sizeof nul - 1, err, sizeof err));
    assert_string_equal(err, "a: string is not valid UTF-8 without NUL");
    //  {"a": 1, "a": 2}
    const char dup[] = "\x82\xa1"
                       "a"
                       "\x01\xa1"
                       "a"
                       "\x02";
    assert_null(drv_mpjson_decode(dup, sizeof dup - 1, err, sizeof err));
    assert_string_equal(err, "(top): duplicate key \"a\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_message_round_trips),
        cmocka_unit_test(test_missing_required_field_is_not_encoded),
        cmocka_unit_test(test_every_message_refuses_each_missing_required_field),
        cmocka_unit_test(test_malformed_messages_are_refused),
        cmocka_unit_test(test_random_bytes_never_crash),
        cmocka_unit_test(test_hostile_counts_are_refused_without_allocating),
        cmocka_unit_test(test_mpjson_round_trip_and_depth_limit),
        cmocka_unit_test(test_mpjson_refuses_what_json_cannot_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
