/*  The HTTP receivers' shared keys (drv_schemas.h): receiver:http and
    receiver:otlp. */
#include "drv_schemas.h"

#include "drover/drv_conn_policy.h"
#include "drover/drv_listen.h"

#include <string.h>

void drv_http_node_check(drv_spec_check_t *check, const char *node_path, const json_t *config, const char *example)
{
    const char *endpoint = json_string_value(json_object_get(config, "endpoint"));
    char why[200];
    drv_listen_endpoint_t parsed;
    if (endpoint && drv_listen_parse(endpoint, &parsed, why, sizeof why) != 0) {
        drv_spec_check_problem(check, node_path, "config.endpoint: %s (host:port, e.g. %s)", why, example);
    } else if (endpoint && parsed.type != DRV_LISTEN_TCP) {
        drv_spec_check_problem(check, node_path, "config.endpoint: must be host:port (%s)", example);
    }
    json_t *max = json_object_get(config, "max_body_bytes");
    if (max && json_integer_value(max) == 0) {
        drv_spec_check_problem(check, node_path, "config.max_body_bytes: must be at least 1");
    }
    drv_conn_limits_t limits = {0};
    if (drv_conn_limits_config(json_object_get(config, "connections"), &limits, why, sizeof why) != 0) {
        drv_spec_check_problem(check, node_path, "config.%s", why);
    }
}

void drv_http_node_check_path(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    const char *path = json_string_value(json_object_get(config, "path"));
    if (path && (path[0] != '/' || strlen(path) > 200 || strpbrk(path, "?# "))) {
        drv_spec_check_problem(check, node_path,
                               "config.path: must start with / and hold no ?, # or space (at most 200 bytes)");
    }
}
