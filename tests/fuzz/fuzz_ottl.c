/*  An OTTL condition or statement as a spec gives it (docs/ottl.md):
    whatever the bytes, the parser refuses them with an offset inside the
    text, or makes a tree the evaluator runs on a record (to true, false or
    a reason; a statement to a record that is still a map), without
    crossing a bound (nesting, keys, arguments) or leaking. */
#include "fuzz.h"

#include "drv_ottl_edit.h"
#include "drv_ottl_eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STR(s) ((msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)strlen(s), (s)}})

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) {
        return 0; // a condition is a line of a spec
    }
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    char err[400] = "";
    drv_ottl_node_t *tree = NULL;
    drv_ottl_statement_t statement;
    if (drv_ottl_statement_init(&statement, text, err, sizeof err) == 0) { // a statement, run on a record
        msgpack_object_kv attrs[] = {{STR("team"), STR("pay")}, {STR("note"), STR("secret=abc")}};
        msgpack_object_kv fields[] = {{STR("body"), STR("{\"a\":1}")},
                                      {STR("attributes"), {.type = MSGPACK_OBJECT_MAP, .via.map = {2, attrs}}}};
        msgpack_object record = {.type = MSGPACK_OBJECT_MAP, .via.map = {2, fields}};
        msgpack_zone zone;
        msgpack_zone_init(&zone, 4096);
        char why[300];
        msgpack_object cache = {.type = MSGPACK_OBJECT_MAP};
        int rc = drv_ottl_statement_run(&statement, &zone, &record, &cache, why, sizeof why);
        FUZZ_ASSERT(rc >= -1 && rc <= 1 && record.type == MSGPACK_OBJECT_MAP);
        msgpack_zone_destroy(&zone);
        drv_ottl_statement_fini(&statement);
    }
    if (drv_ottl_parse_condition(text, &tree, err, sizeof err) != 0) {
        unsigned long at = 0;
        FUZZ_ASSERT(tree == NULL && sscanf(err, "at offset %lu", &at) <= 1);
        FUZZ_ASSERT(strncmp(err, "at offset ", 10) != 0 || at <= size);
        free(text);
        return 0;
    }
    drv_ottl_free(tree, NULL);
    drv_ottl_condition_t condition;
    if (drv_ottl_condition_init(&condition, text, err, sizeof err) == 0) {
        msgpack_object_kv attrs[] = {{STR("team"), STR("pay")},
                                     {STR("n"), {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 3}}};
        msgpack_object_kv fields[] = {{STR("body"), STR("GET /index.html 200")},
                                      {STR("severity_number"), {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 9}},
                                      {STR("attributes"), {.type = MSGPACK_OBJECT_MAP, .via.map = {2, attrs}}}};
        msgpack_object record = {.type = MSGPACK_OBJECT_MAP, .via.map = {3, fields}};
        char why[300];
        int met = drv_ottl_condition_eval(&condition, &record, why, sizeof why);
        FUZZ_ASSERT(met == 0 || met == 1 || (met == -1 && why[0]));
        drv_ottl_condition_fini(&condition);
    }
    free(text);
    return 0;
}
