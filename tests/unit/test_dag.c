/*  The worker's DAG without any process around it: filter and transform
    semantics, NDJSON encoding, fan-out isolation, init failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "drv_dag.h"
#include "drv_nodes.h"
#include "observed.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char s_dir[64];

static int s_setup(void **state)
{
    (void)state;
    snprintf(s_dir, sizeof s_dir, "/tmp/drv-dag-XXXXXX");
    return mkdtemp(s_dir) ? 0 : -1;
}

static int s_teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", s_dir);
    return system(cmd);
}

static char *s_read(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return strdup("");
    }
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static drv_dag_t *s_dag(const char *nodes_json, const char *name)
{
    char json[4096];
    snprintf(json, sizeof json, nodes_json, s_dir, name, s_dir, name);
    json_error_t jerr;
    json_t *nodes = json_loads(json, 0, &jerr);
    if (!nodes) {
        fail_msg("bad JSON %s", jerr.text);
    }
    json_t *spec = json_pack("{s:o}", "nodes", nodes);
    drv_dag_identity_t who = {"default", "p", 2, 1, NULL, 1, NULL};
    char err[300];
    drv_dag_t *dag = drv_dag_new(spec, &who, drv_nodes_kinds(), err, sizeof err);
    json_decref(spec);
    if (!dag) {
        fail_msg("dag: %s", err);
    }
    return dag;
}

//  Packs a JSON array of records as one producer message.
static void s_ingest(drv_dag_t *dag, const char *records_json, int expect)
{
    json_t *records = json_loads(records_json, 0, NULL);
    assert_non_null(records);
    msgpack_sbuffer sbuf;
    msgpack_sbuffer_init(&sbuf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, json_array_size(records));
    size_t i;
    json_t *record;
    json_array_foreach(records, i, record)
    {
        const char *key;
        json_t *value;
        msgpack_pack_map(&pk, json_object_size(record));
        json_object_foreach(record, key, value)
        {
            msgpack_pack_str_with_body(&pk, key, strlen(key));
            if (json_is_integer(value)) {
                msgpack_pack_int64(&pk, json_integer_value(value));
            } else if (json_is_string(value)) {
                msgpack_pack_str_with_body(&pk, json_string_value(value), json_string_length(value));
            } else if (json_is_real(value)) {
                msgpack_pack_double(&pk, json_real_value(value));
            } else if (json_is_boolean(value)) {
                json_is_true(value) ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk);
            } else {
                msgpack_pack_bin_with_body(&pk, "\x00\xff\x10", 3); // null stands for binary here
            }
        }
    }
    char err[200];
    assert_int_equal(drv_dag_ingest(dag, "in", sbuf.data, sbuf.size, err, sizeof err), expect);
    msgpack_sbuffer_destroy(&sbuf);
    json_decref(records);
}

static void s_filter_case(const char *op, const char *value, const char *expect)
{
    char nodes[2048];
    snprintf(nodes, sizeof nodes,
             "{\"in\":{\"type\":\"receiver:zmq\",\"config\":{\"endpoint\":\"tcp://127.0.0.1:1\"},\"to\":[\"f\"]},"
             "\"f\":{\"type\":\"processor:filter\",\"config\":{\"field\":\"v\",\"op\":\"%s\"%s%s},\"to\":[\"out\"]},"
             "\"out\":{\"type\":\"exporter:file\",\"config\":{\"path\":\"%%s/%%s.ndjson\",\"format\":\"ndjson\"}}}",
             op, value ? ",\"value\":" : "", value ? value : "");
    char name[64];
    snprintf(name, sizeof name, "filter-%s-%d", op, rand());
    drv_dag_t *dag = s_dag(nodes, name);
    s_ingest(dag,
             "[{\"id\":1,\"v\":1},{\"id\":2,\"v\":3},{\"id\":3,\"v\":\"3\"},{\"id\":4},{\"id\":5,\"v\":3.0},"
             "{\"id\":6,\"v\":\"abc\"}]",
             6);
    char path[256];
    snprintf(path, sizeof path, "%s/%s.ndjson", s_dir, name);
    char *text = s_read(path);
    //  Collect the ids that passed.
    char ids[64] = "";
    for (char *p = strstr(text, "\"id\":"); p; p = strstr(p + 1, "\"id\":")) {
        char id[8];
        snprintf(id, sizeof id, "%c", p[5]);
        strcat(ids, id);
    }
    if (strcmp(ids, expect) != 0) {
        fail_msg("op %s value %s: kept [%s], expected [%s]", op, value ? value : "-", ids, expect);
    }
    free(text);
    drv_dag_destroy(&dag);
}

static void test_filter_ops(void **state)
{
    (void)state;
    s_filter_case("eq", "3", "25");
    s_filter_case("ne", "3", "136"); // a record without the field matches no op
    s_filter_case("lt", "3", "1");
    s_filter_case("le", "3", "125");
    s_filter_case("gt", "1", "25");
    s_filter_case("ge", "\"3\"", "36"); // strings compare with strings only
    s_filter_case("eq", "\"abc\"", "6");
    s_filter_case("exists", NULL, "12356");
}

static void test_transform_set_rename_delete_in_order(void **state)
{
    (void)state;
    drv_dag_t *dag =
        s_dag("{\"in\":{\"type\":\"receiver:zmq\",\"config\":{\"endpoint\":\"tcp://127.0.0.1:1\"},\"to\":[\"t\"]},"
              "\"t\":{\"type\":\"processor:transform\",\"config\":{\"set\":{\"env\":\"prod\",\"a\":9},"
              "\"rename\":{\"msg\":\"message\",\"a\":\"b\"},\"delete\":[\"debug\",\"env2\"]},\"to\":[\"out\"]},"
              "\"out\":{\"type\":\"exporter:file\",\"config\":{\"path\":\"%s/%s.ndjson\"}}}",
              "transform");
    s_ingest(dag, "[{\"msg\":\"hi\",\"debug\":1,\"b\":1,\"env\":\"dev\"}]", 1);
    char path[256];
    snprintf(path, sizeof path, "%s/transform.ndjson", s_dir);
    char *text = s_read(path);
    assert_true(test_unobserved(text));
    //  set overwrote env and added a; rename moved a over the existing b; delete dropped debug.
    assert_string_equal(text, "{\"message\":\"hi\",\"env\":\"prod\",\"b\":9}\n");
    free(text);
    drv_dag_destroy(&dag);
}

static void test_fan_out_branches_do_not_see_each_other(void **state)
{
    (void)state;
    drv_dag_t *dag = s_dag(
        "{\"in\":{\"type\":\"receiver:zmq\",\"config\":{\"endpoint\":\"tcp://127.0.0.1:1\"},\"to\":[\"t\",\"raw\"]},"
        "\"t\":{\"type\":\"processor:transform\",\"config\":{\"set\":{\"x\":1}},\"to\":[\"out\"]},"
        "\"out\":{\"type\":\"exporter:file\",\"config\":{\"path\":\"%s/%s-t.ndjson\"}},"
        "\"raw\":{\"type\":\"exporter:file\",\"config\":{\"path\":\"%s/%s-raw.ndjson\",\"format\":\"msgpack\"}}}",
        "fan");
    s_ingest(dag, "[{\"k\":\"v\",\"bin\":null}]", 1);
    char path[256];
    snprintf(path, sizeof path, "%s/fan-t.ndjson", s_dir);
    char *text = s_read(path);
    assert_true(test_unobserved(text));
    assert_string_equal(text, "{\"k\":\"v\",\"bin\":\"AP8Q\",\"x\":1}\n"); // binary as base64
    free(text);
    snprintf(path, sizeof path, "%s/fan-raw.ndjson", s_dir);
    text = s_read(path);
    //  msgpack format: the untouched record, two keys and the observed time.
    assert_int_equal((unsigned char)text[0], 0x83);
    free(text);
    int64_t in, out, errors;
    drv_dag_counters(dag, &in, &out, &errors);
    assert_int_equal(in, 1);
    assert_int_equal(out, 1); // one record, however many exporters it fans out to
    assert_int_equal(errors, 0);
    drv_dag_destroy(&dag);
}

static void test_malformed_input_is_counted_not_forwarded(void **state)
{
    (void)state;
    drv_dag_t *dag =
        s_dag("{\"in\":{\"type\":\"receiver:zmq\",\"config\":{\"endpoint\":\"tcp://127.0.0.1:1\"},\"to\":[\"out\"]},"
              "\"out\":{\"type\":\"exporter:null\"}}",
              "junk");
    char err[200];
    assert_int_equal(drv_dag_ingest(dag, "in", "\xc1", 1, err, sizeof err), -1);
    assert_int_equal(drv_dag_ingest(dag, "in", "\x92\x01\x02", 3, err, sizeof err), -1);
    assert_string_equal(err, "batch item 0 is not a map");
    assert_int_equal(drv_dag_ingest(dag, "in", "\x81\xa1k", 3, err, sizeof err), -1);
    assert_string_equal(err, "truncated msgpack (3 bytes)");
    assert_int_equal(drv_dag_ingest(dag, "in", "\xdd\x7f\xff\xff\xff", 5, err, sizeof err), -1);
    assert_non_null(strstr(err, "claims 2147483647 items"));
    assert_int_equal(drv_dag_ingest(dag, "nope", "\x80", 1, err, sizeof err), -1);
    assert_int_equal(drv_dag_ingest(dag, "in", "\x80", 1, err, sizeof err), 1); // an empty map is a record
    int64_t in, out, errors;
    drv_dag_counters(dag, &in, &out, &errors);
    assert_int_equal(in, 1);
    assert_int_equal(errors, 5);
    drv_dag_destroy(&dag);
}

//  /dev/full answers every write with ENOSPC: the exporter holds the batch
//  without blocking (issue 24), counts a retry (not an error: nothing is
//  given up; docs/operations.md), keeps
//  its input unsettled (not acknowledged upstream) and polls a timer that
//  retries it; a second batch waits behind it.
static void test_full_disk_holds_the_batch_unsettled_without_blocking(void **state)
{
    (void)state;
    json_t *spec = json_loads("{\"nodes\":{\"in\":{\"type\":\"receiver:zmq\",\"config\":{\"endpoint\":"
                              "\"tcp://127.0.0.1:1\"},\"to\":[\"out\"]},"
                              "\"out\":{\"type\":\"exporter:file\",\"config\":{\"path\":\"/dev/full\"}}}}",
                              0, NULL);
    drv_dag_identity_t who = {"default", "p", 1, 0, NULL, 1, NULL};
    char err[300];
    drv_dag_t *dag = drv_dag_new(spec, &who, drv_nodes_kinds(), err, sizeof err);
    assert_non_null(dag);
    int fds[4];
    size_t nodes[4];
    assert_int_equal(drv_dag_fds(dag, fds, nodes, 4), 0); // nothing held: nothing to poll
    assert_int_equal(drv_dag_ingest(dag, "in", "\x92\x81\xa1k\x01\x81\xa1k\x02", 9, err, sizeof err), 2);
    int64_t first = drv_dag_input(dag);
    assert_int_equal(drv_dag_ingest(dag, "in", "\x91\x81\xa1k\x03", 5, err, sizeof err), 1);
    assert_true(drv_dag_settle(dag) < first);
    assert_int_equal(drv_dag_fds(dag, fds, nodes, 4), 1); // the retry timer
    assert_false(drv_dag_backlogged(dag));
    drv_dag_readable(dag, nodes[0]); // not due yet: nothing is tried
    int64_t in, out, errors;
    drv_dag_counters(dag, &in, &out, &errors);
    assert_int_equal(in, 3);
    assert_int_equal(out, 0);
    assert_int_equal(errors, 0); // held and retried: nothing given up
    drv_dag_destroy(&dag);
    json_decref(spec);
}

static void test_unopenable_file_fails_init(void **state)
{
    (void)state;
    json_t *spec =
        json_loads("{\"nodes\":{\"in\":{\"type\":\"receiver:generator\",\"config\":{},\"to\":[\"out\"]},"
                   "\"out\":{\"type\":\"exporter:file\",\"config\":{\"path\":\"/proc/none/{core}.ndjson\"}}}}",
                   0, NULL);
    drv_dag_identity_t who = {"default", "p", 1, 3, NULL, 1, NULL};
    char err[300];
    assert_null(drv_dag_new(spec, &who, drv_nodes_kinds(), err, sizeof err));
    assert_non_null(strstr(err, "node out: cannot open /proc/none/3.ndjson"));
    json_decref(spec);
}

//  Contract 6.1: NDJSON is strictly valid UTF-8 whatever came in, and a
//  record with a duplicate key never reaches a processor or an exporter.
static void test_ndjson_is_valid_utf8_and_duplicate_keys_are_refused(void **state)
{
    (void)state;
    drv_dag_t *dag =
        s_dag("{\"in\":{\"type\":\"receiver:zmq\",\"config\":{\"endpoint\":\"tcp://127.0.0.1:1\"},"
              "\"to\":[\"out\"]},\"out\":{\"type\":\"exporter:file\",\"config\":{\"path\":\"%s/%s.ndjson\"}}}",
              "strict");
    char err[200];
    //  {"s": surrogate, "o": overlong "/", "h": past U+10FFFF, "ok": "é"}
    const char record[] = "\x84\xa1s\xa3\xed\xa0\x80\xa1o\xa2\xc0\xaf\xa1h\xa4\xf4\x90\x80\x80\xa2ok\xa2\xc3\xa9";
    assert_int_equal(drv_dag_ingest(dag, "in", record, sizeof record - 1, err, sizeof err), 1);
    //  {"a": 1, "b": 2, "a": 3}: refused whole, with the key named.
    const char dup[] = "\x83\xa1"
                       "a"
                       "\x01\xa1"
                       "b"
                       "\x02\xa1"
                       "a"
                       "\x03";
    assert_true(drv_dag_ingest(dag, "in", dup, sizeof dup - 1, err, sizeof err) < 0);
    assert_string_equal(err, "record has a duplicate key \"a\"");
    //  ... also inside a nested map of a batch.
    const char nested[] = "\x91\x81\xa1m\x82\xa1x\x01\xa1x\x02";
    assert_true(drv_dag_ingest(dag, "in", nested, sizeof nested - 1, err, sizeof err) < 0);
    assert_string_equal(err, "batch item 0 has a duplicate key \"x\"");
    char path[256];
    snprintf(path, sizeof path, "%s/strict.ndjson", s_dir);
    char *text = s_read(path);
    assert_true(test_unobserved(text));
    const char *fffd = "\xef\xbf\xbd";
    char expected[200];
    snprintf(expected, sizeof expected, "{\"s\":\"%s%s%s\",\"o\":\"%s%s\",\"h\":\"%s%s%s%s\",\"ok\":\"\xc3\xa9\"}\n",
             fffd, fffd, fffd, fffd, fffd, fffd, fffd, fffd, fffd);
    assert_string_equal(text, expected);
    free(text);
    drv_dag_destroy(&dag);
}

static void test_symlinked_output_is_refused(void **state)
{
    (void)state;
    char target[128], link[128];
    snprintf(target, sizeof target, "%s/secret", s_dir);
    snprintf(link, sizeof link, "%s/link.ndjson", s_dir);
    FILE *f = fopen(target, "w");
    fputs("keep\n", f);
    fclose(f);
    assert_int_equal(symlink(target, link), 0);
    char json[512];
    snprintf(json, sizeof json,
             "{\"nodes\":{\"in\":{\"type\":\"receiver:generator\",\"config\":{},\"to\":[\"out\"]},"
             "\"out\":{\"type\":\"exporter:file\",\"config\":{\"path\":\"%s\"}}}}",
             link);
    json_t *spec = json_loads(json, 0, NULL);
    drv_dag_identity_t who = {"default", "p", 1, 0, NULL, 1, NULL};
    char err[300];
    assert_null(drv_dag_new(spec, &who, drv_nodes_kinds(), err, sizeof err));
    assert_non_null(strstr(err, "symbolic link"));
    char *text = s_read(target);
    assert_string_equal(text, "keep\n");
    free(text);
    json_decref(spec);
}

static void test_generator_paces_and_stops_at_count(void **state)
{
    (void)state;
    drv_dag_t *dag = s_dag("{\"in\":{\"type\":\"receiver:generator\",\"config\":{\"rate\":1000,\"count\":150,"
                           "\"record\":{\"a\":1}},\"to\":[\"out\"]},"
                           "\"out\":{\"type\":\"exporter:null\"}}",
                           "gen");
    int64_t wait;
    int total = drv_dag_generate(dag, 1000000, &wait); // t=1s: first record due
    assert_int_equal(total, 1);
    total += drv_dag_generate(dag, 1000000 + 50000, &wait); // +50 ms at 1000/s
    assert_int_equal(total, 51);
    total += drv_dag_generate(dag, 1000000 + 10000000, &wait); // much later: capped per batch
    assert_int_equal(total, 51 + 64);
    total += drv_dag_generate(dag, 1000000 + 10000000, &wait);
    total += drv_dag_generate(dag, 1000000 + 10000000, &wait);
    assert_int_equal(total, 150);
    assert_int_equal(wait, -1); // finished
    drv_dag_destroy(&dag);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_filter_ops),
        cmocka_unit_test(test_transform_set_rename_delete_in_order),
        cmocka_unit_test(test_fan_out_branches_do_not_see_each_other),
        cmocka_unit_test(test_malformed_input_is_counted_not_forwarded),
        cmocka_unit_test(test_unopenable_file_fails_init),
        cmocka_unit_test(test_full_disk_holds_the_batch_unsettled_without_blocking),
        cmocka_unit_test(test_generator_paces_and_stops_at_count),
        cmocka_unit_test(test_ndjson_is_valid_utf8_and_duplicate_keys_are_refused),
        cmocka_unit_test(test_symlinked_output_is_refused),
    };
    return cmocka_run_group_tests(tests, s_setup, s_teardown);
}
