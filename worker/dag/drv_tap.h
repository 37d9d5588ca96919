/*  drv_tap — samples of the records leaving tapped nodes (docs/operations.md, seeing it live).
    droverd says which nodes (a `tap` control message); what leaves them is
    sampled, at most per_sec records per second and node, rendered as JSON
    and sent back in `tapped` messages. A node nobody taps costs one check
    of node->tap per batch, nothing more. */
#ifndef DRV_TAP_H
#define DRV_TAP_H

#include "drv_dag.h"
#include "drv_node.h"

#include <jansson.h>
#include <msgpack.h>

//  Taps exactly these nodes (a JSON array of ids; unknown ones are
//  ignored: another generation may have them); [] stops every tap.
void drv_tap_set(drv_dag_t *dag, const json_t *nodes, int64_t per_sec);
//  Records leaving node: samples what the window still allows, spread over the batch.
void drv_tap_sample(drv_node_t *node, const msgpack_object *records, size_t n);
bool drv_tap_pending(const drv_dag_t *dag);
//  The samples taken since the last call ([[node, text], ...]), or NULL.
json_t *drv_tap_take(drv_dag_t *dag);

#endif
