/*  drv_nodes — the node kinds every build has: one line each. */
#include "drv_nodes.h"
#include "drv_node.h"

#include <string.h>

extern const drv_node_kind_t drv_receiver_zmq;
extern const drv_node_kind_t drv_receiver_generator;
extern const drv_node_kind_t drv_receiver_syslog;
extern const drv_node_kind_t drv_receiver_http;
extern const drv_node_kind_t drv_receiver_otlp;
extern const drv_node_kind_t drv_processor_filter;
extern const drv_node_kind_t drv_processor_transform;
extern const drv_node_kind_t drv_processor_route;
extern const drv_node_kind_t drv_processor_lua;
extern const drv_node_kind_t drv_processor_parse;
extern const drv_node_kind_t drv_receiver_file;
extern const drv_node_kind_t drv_receiver_journald;
extern const drv_node_kind_t drv_exporter_file;
extern const drv_node_kind_t drv_exporter_zmq;
extern const drv_node_kind_t drv_exporter_null;
extern const drv_node_kind_t drv_exporter_http;
extern const drv_node_kind_t drv_exporter_otlp;
extern const drv_node_kind_t drv_exporter_kafka;
extern const drv_node_kind_t drv_receiver_kafka;
extern const drv_node_kind_t drv_processor_kubernetes;
extern const drv_node_kind_t drv_receiver_hostmetrics;
extern const drv_node_kind_t drv_exporter_prometheus_remote_write;
extern const drv_node_kind_t drv_exporter_s3;
extern const drv_node_kind_t drv_receiver_prometheus_remote_write;
extern const drv_node_kind_t drv_receiver_prometheus;

static const drv_node_kind_t *const s_kinds[] = {
    &drv_receiver_zmq,         &drv_receiver_generator,
    &drv_processor_filter,     &drv_processor_transform,
    &drv_exporter_file,        &drv_exporter_zmq,
    &drv_exporter_null,        &drv_receiver_syslog,
    &drv_receiver_http,        &drv_receiver_otlp,
    &drv_exporter_http,        &drv_exporter_otlp,
    &drv_processor_route,      &drv_processor_lua,
    &drv_processor_parse,      &drv_receiver_file,
    &drv_receiver_journald,    &drv_exporter_kafka,
    &drv_receiver_kafka,       &drv_processor_kubernetes,
    &drv_receiver_hostmetrics, &drv_exporter_prometheus_remote_write,
    &drv_exporter_s3,          &drv_receiver_prometheus_remote_write,
    &drv_receiver_prometheus,
};

#define KIND_COUNT (sizeof s_kinds / sizeof s_kinds[0])

const drv_kinds_t *drv_nodes_kinds(void)
{
    static const drv_kinds_t kinds = {s_kinds, KIND_COUNT};
    return &kinds;
}
