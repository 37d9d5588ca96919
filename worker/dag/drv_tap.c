/*  drv_tap — sampling what leaves tapped nodes (drv_tap.h). Windows of
    100 ms, each allowing a tenth of the per-second budget, so a flat-out
    source gives a steady trickle rather than a burst at each second. */
#include "drv_tap.h"
#include "drv_dag_internal.h"
#include "drv_ndjson.h"

#include "drover/drv_time.h"

#include <string.h>

#define WINDOW_MS 100
#define MAX_PENDING 1000 // samples droverd has not been sent yet; more are not taken

void drv_tap_set(drv_dag_t *dag, const json_t *nodes, int64_t per_sec)
{
    dag->tap_per_sec = per_sec > 0 ? per_sec : 100;
    for (size_t i = 0; i < dag->count; i++) {
        drv_node_t *node = &dag->nodes[i];
        bool wanted = false;
        size_t k;
        json_t *id;
        json_array_foreach(nodes, k, id)
        {
            wanted |= json_is_string(id) && !strcmp(json_string_value(id), node->id);
        }
        node->tap = !wanted                                         ? DRV_TAP_OFF
                    : node->kind->schema->role == DRV_ROLE_EXPORTER ? DRV_TAP_INPUT
                                                                    : DRV_TAP_OUTPUT;
        node->tap_taken = 0;
        node->tap_window_ms = 0;
    }
}

static void s_keep(drv_node_t *node, const msgpack_object *record)
{
    drv_dag_t *dag = node->dag;
    drv_buf_reset(&dag->tap_buf);
    if (drv_ndjson_append(&dag->tap_buf, record) != 0 || dag->tap_buf.len == 0) {
        return;
    }
    if (!dag->tap_samples) {
        dag->tap_samples = json_array();
    }
    json_array_append_new(dag->tap_samples,
                          json_pack("[s, s%]", node->id, dag->tap_buf.data, dag->tap_buf.len - 1)); // no newline
}

void drv_tap_sample(drv_node_t *node, const msgpack_object *records, size_t n)
{
    drv_dag_t *dag = node->dag;
    int64_t now = drv_time_mono_ms();
    if (now - node->tap_window_ms >= WINDOW_MS) {
        node->tap_window_ms = now;
        node->tap_taken = 0;
    }
    int64_t budget = dag->tap_per_sec * WINDOW_MS / 1000;
    budget = (budget < 1 ? 1 : budget) - node->tap_taken;
    if (budget <= 0 || n == 0 || (dag->tap_samples && json_array_size(dag->tap_samples) >= MAX_PENDING)) {
        return;
    }
    size_t take = (size_t)budget < n ? (size_t)budget : n;
    for (size_t i = 0; i < take; i++) {
        s_keep(node, &records[i * n / take]); // spread over the batch
    }
    node->tap_taken += (int)take;
}

bool drv_tap_pending(const drv_dag_t *dag)
{
    return dag->tap_samples != NULL;
}

json_t *drv_tap_take(drv_dag_t *dag)
{
    json_t *samples = dag->tap_samples;
    dag->tap_samples = NULL;
    return samples;
}
