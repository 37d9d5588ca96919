/*  exporter:otlp's schema (worker/nodes/drv_exporter_otlp.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"

#include <stdio.h>
#include <string.h>

static bool s_has_scheme(const char *endpoint)
{
    return !strncmp(endpoint, "http://", 7) || !strncmp(endpoint, "https://", 8);
}

//  gRPC's host:port is an http:// URL to the shared checks.
static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    const char *endpoint = json_string_value(json_object_get(config, "endpoint"));
    bool grpc = !strcmp(json_string_value(json_object_get(config, "protocol")) ?: "http", "grpc");
    if (grpc && endpoint && !s_has_scheme(endpoint)) {
        json_t *copy = json_copy((json_t *)config);
        char *url = NULL;
        if (copy && asprintf(&url, "http://%s", endpoint) >= 0) {
            json_object_set_new(copy, "endpoint", json_string(url));
            drv_export_check(check, node_path, copy);
        }
        free(url);
        json_decref(copy);
    } else {
        drv_export_check(check, node_path, config);
    }
    if (grpc && endpoint && s_has_scheme(endpoint) && strchr(strstr(endpoint, "//") + 2, '/') &&
        strchr(strstr(endpoint, "//") + 2, '/')[1]) {
        drv_spec_check_problem(check, node_path,
                               "config.endpoint: with protocol grpc, host:port or a URL "
                               "without a path (the service names the path)");
    }
    if (grpc && json_object_get(config, "encoding") &&
        strcmp(json_string_value(json_object_get(config, "encoding")) ?: "", "protobuf") != 0) {
        drv_spec_check_problem(check, node_path, "config.encoding: OTLP/gRPC is protobuf only");
    }
}

const drv_node_schema_t drv_schema_exporter_otlp = {
    .name = "exporter:otlp",
    .role = DRV_ROLE_EXPORTER,
    .doc = "Sends records as OTLP logs, spans and metrics to a collector or backend, over HTTP "
           "(/v1/logs, /v1/traces, /v1/metrics under endpoint) or gRPC; batched, gzip'd, retried "
           "like exporter:http.",
    .example = "{type: exporter:otlp, config: {endpoint: \"http://127.0.0.1:4318\"}}",
    .keys = {{.key = "endpoint",
              .kind = DRV_KEY_STRING,
              .required = true,
              .doc = "the backend's base URL (http:// or https://); the signal's path is added"},
             {.key = "encoding",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"protobuf\"",
              .choices = "protobuf json",
              .doc = "protobuf or json (HTTP only)"},
             {.key = "protocol",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"http\"",
              .choices = "http grpc",
              .doc = "http (OTLP/HTTP) or grpc (OTLP/gRPC over HTTP/2)"},
             DRV_EXPORT_KEYS},
    .check = s_check,
    .complete = drv_export_complete,
};
