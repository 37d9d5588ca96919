/*  A producer message as the broker and a worker meet it: the one decoder
    (drv_batch, which the broker's ack-mode check also runs), then a DAG with
    every processor and both file formats, so records of any shape go through
    transform, filter and the NDJSON and msgpack writers (to /dev/null). */
#include "fuzz.h"

#include "drv_dag.h"
#include "drv_nodes.h"

#include <stdlib.h>

static drv_dag_t *s_dag;

static void s_destroy(void)
{
    drv_dag_destroy(&s_dag);
}

static drv_dag_t *s_build(void)
{
    json_t *spec = json_loads(
        "{\"nodes\":{"
        "\"in\":{\"type\":\"receiver:zmq\",\"config\":{\"endpoint\":\"tcp://127.0.0.1:1\"},\"to\":[\"t\",\"raw\"]},"
        "\"t\":{\"type\":\"processor:transform\",\"config\":{\"set\":{\"env\":\"fuzz\",\"n\":1.5},"
        "\"rename\":{\"a\":\"b\"},\"delete\":[\"c\"]},\"to\":[\"f\"]},"
        "\"f\":{\"type\":\"processor:filter\",\"config\":{\"field\":\"level\",\"op\":\"ge\",\"value\":3},"
        "\"to\":[\"out\"]},"
        "\"out\":{\"type\":\"exporter:file\",\"config\":{\"path\":\"/dev/null\",\"format\":\"ndjson\"}},"
        "\"raw\":{\"type\":\"exporter:file\",\"config\":{\"path\":\"/dev/null\",\"format\":\"msgpack\"}}}}",
        0, NULL);
    drv_dag_identity_t who = {"fuzz", "batch", 1, 0, NULL, 1, NULL};
    char err[300];
    drv_dag_t *dag = drv_dag_new(spec, &who, drv_nodes_kinds(), err, sizeof err);
    json_decref(spec);
    FUZZ_ASSERT(dag);
    return dag;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!s_dag) {
        s_dag = s_build();
        atexit(s_destroy);
    }
    char err[200] = "";
    int n = drv_dag_ingest(s_dag, "in", data, size, err, sizeof err);
    FUZZ_ASSERT(n >= 0 || err[0]);
    return 0;
}
