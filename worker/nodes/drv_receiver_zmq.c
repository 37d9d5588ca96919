/*  receiver:zmq — records from producers, through the broker's front door
    for this node (the broker binds the endpoint; drv_dag_ingest feeds it). */
#include "drv_node.h"

const drv_node_kind_t drv_receiver_zmq = {
    .schema = {.name = "receiver:zmq",
               .role = DRV_ROLE_RECEIVER,
               .keys = {{"endpoint", DRV_KEY_ENDPOINT, true, NULL, NULL, 0, false},
                        {"ack", DRV_KEY_BOOL, false, "false", NULL, 0, false}}},
    .fed_by_broker = true,
};
