/*  receiver:syslog's schema (worker/nodes/drv_receiver_syslog.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_conn_policy.h"
#include "drover/drv_limits.h"
#include "drover/drv_listen.h"
#include "drover/drv_node_schema.h"

#include <string.h>

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    const char *endpoint = json_string_value(json_object_get(config, "endpoint"));
    char why[200];
    drv_listen_endpoint_t parsed;
    if (endpoint && drv_listen_parse(endpoint, &parsed, why, sizeof why) != 0) {
        drv_spec_check_problem(check, node_path, "config.endpoint: %s", why);
    } else if (endpoint && !strstr(endpoint, "://")) {
        drv_spec_check_problem(check, node_path, "config.endpoint: must be udp://host:port or tcp://host:port");
    }
    json_t *max = json_object_get(config, "max_message_bytes");
    if (max && json_integer_value(max) == 0) {
        drv_spec_check_problem(check, node_path, "config.max_message_bytes: must be at least 1");
    }
    drv_conn_limits_t limits = {0};
    json_t *connections = json_object_get(config, "connections");
    if (drv_conn_limits_config(connections, &limits, why, sizeof why) != 0) {
        drv_spec_check_problem(check, node_path, "config.%s", why);
    } else if (json_object_get(connections, "request_secs")) {
        drv_spec_check_problem(check, node_path,
                               "config.connections.request_secs: a syslog sender has no "
                               "requests; idle_secs is how long it may stay silent");
    }
}

const drv_node_schema_t drv_schema_receiver_syslog = {
    .name = "receiver:syslog",
    .role = DRV_ROLE_RECEIVER,
    .doc = "RFC 5424 and RFC 3164 messages over UDP (one per datagram) or TCP (octet-counted or one "
           "per line); each becomes {facility, severity, timestamp, hostname, app_name, procid, "
           "msgid, structured_data, message, format}.",
    .example = "{type: receiver:syslog, config: {endpoint: \"udp://127.0.0.1:5514\"}, to: [out]}",
    .keys = {{.key = "endpoint",
              .kind = DRV_KEY_STRING,
              .required = true,
              .doc = "udp://host:port or tcp://host:port, bound by droverd"},
             {.key = "max_message_bytes",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "65536",
              .maximum = DRV_SYSLOG_FRAME_LIMIT,
              .doc = "TCP: the longest message; a longer one closes its connection (never split), logged and "
                     "counted in errors"},
             {.key = "connections",
              .kind = DRV_KEY_OBJECT,
              .doc = "{per_address, total, idle_secs}: TCP connections one sender address may hold (default "
                     "64), all together (1024), per instance; how long a sender may stay silent (300 s). "
                     "Behind a load balancer every sender may share a few addresses: raise per_address"}},
    .check = s_check,
};
