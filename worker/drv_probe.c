/*  drv_probe — see drv_probe.h. */
#include "drv_probe.h"
#include "drv_dag.h"
#include "drv_nodes.h"
#include "drv_node.h"

#include "drover/drv_listen.h"
#include "drover/drv_log.h"
#include "drover/drv_problems.h"

#include <jansson.h>
#include <stdio.h>

int drv_probe_main(void)
{
    drv_log_init("probe");
    json_error_t err;
    json_t *input = json_loadf(stdin, 0, &err);
    json_t *spec = json_object_get(input, "spec");
    if (!json_is_object(spec)) {
        fprintf(stderr, "drover-worker --probe: stdin must be {spec, group, pipeline, generation, core}: %s\n",
                input ? "no spec" : err.text);
        json_decref(input);
        return 2;
    }
    drv_node_probe = true;
    drv_listen_probe();
    drv_dag_identity_t who = {json_string_value(json_object_get(input, "group")),
                              json_string_value(json_object_get(input, "pipeline")),
                              json_integer_value(json_object_get(input, "generation")),
                              (int)json_integer_value(json_object_get(input, "core")),
                              NULL,
                              1,
                              NULL};
    drv_problems_t *problems = drv_problems_new();
    drv_dag_probe(spec, &who, drv_nodes_kinds(), problems);
    json_t *out = json_pack("{s:o}", "problems", drv_problems_to_json(problems));
    drv_problems_destroy(&problems);
    json_dumpf(out, stdout, JSON_COMPACT);
    fputc('\n', stdout);
    json_decref(out);
    json_decref(input);
    return 0;
}
