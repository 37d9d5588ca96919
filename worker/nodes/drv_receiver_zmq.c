/*  receiver:zmq — records from producers, through the broker's front door
    for this node (the broker binds the endpoint; drv_dag_ingest feeds it). */
#include "drv_node.h"
#include "drv_schemas.h"

const drv_node_kind_t drv_receiver_zmq = {
    .schema = &drv_schema_receiver_zmq,
    .fed_by_broker = true,
};
