/*  drv_nodes — every node kind the worker has (drv_nodes.c, one line
    each): handed to the DAG by whoever builds one. Their schemas are
    worker/schemas/ (drv_schemas_register). */
#ifndef DRV_NODES_H
#define DRV_NODES_H

#include "drv_dag.h"

//  Every kind, for drv_dag_new and drv_dag_probe.
const drv_kinds_t *drv_nodes_kinds(void);

#endif
