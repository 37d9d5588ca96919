/*  drv_schemas — every node kind's schema, in the order the kinds table
    (worker/nodes/drv_nodes.c) lists them, and their registration. */
#include "drv_schemas.h"

#include "drover/drv_spec.h"

static const drv_node_schema_t *const s_schemas[] = {
    &drv_schema_receiver_zmq,         &drv_schema_receiver_generator,
    &drv_schema_processor_filter,     &drv_schema_processor_transform,
    &drv_schema_exporter_file,        &drv_schema_exporter_zmq,
    &drv_schema_exporter_null,        &drv_schema_receiver_syslog,
    &drv_schema_receiver_http,        &drv_schema_receiver_otlp,
    &drv_schema_exporter_http,        &drv_schema_exporter_otlp,
    &drv_schema_processor_route,      &drv_schema_processor_lua,
    &drv_schema_processor_parse,      &drv_schema_receiver_file,
    &drv_schema_receiver_journald,    &drv_schema_receiver_kafka,
    &drv_schema_exporter_kafka,       &drv_schema_processor_kubernetes,
    &drv_schema_receiver_hostmetrics, &drv_schema_exporter_prometheus_remote_write,
    &drv_schema_exporter_s3,          &drv_schema_receiver_prometheus_remote_write,
    &drv_schema_receiver_prometheus,
};

void drv_schemas_register(void)
{
    drv_spec_set_kinds(s_schemas, sizeof s_schemas / sizeof s_schemas[0]);
}
