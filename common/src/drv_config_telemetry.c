/*  drv_config_telemetry — engine.telemetry (docs/operations.md, "Its own
    telemetry"): where droverd pushes its own metrics and log lines as
    OTLP, checked when the file is read, with its defaults filled in. */
#include "drv_config_internal.h"

#include "drover/drv_secret.h"

#include <stdio.h>
#include <string.h>

json_t *drv_config_telemetry(json_t *telemetry, drv_problems_t *problems)
{
    if (!telemetry || json_is_null(telemetry)) {
        return NULL;
    }
    json_t *otlp = json_object_get(telemetry, "otlp");
    if (!json_is_object(telemetry) || !json_is_object(otlp)) {
        drv_problems_add(problems, "engine.telemetry",
                         "must be a map with otlp: {endpoint, protocol, headers, interval_secs, logs, metrics}");
        return NULL;
    }
    drv_problems_unknown_keys(problems, telemetry, "otlp", "engine.telemetry");
    drv_problems_unknown_keys(problems, otlp, "endpoint protocol headers interval_secs logs metrics max_queued_logs",
                              "engine.telemetry.otlp");
    const char *endpoint = json_string_value(json_object_get(otlp, "endpoint"));
    if (!endpoint || (strncmp(endpoint, "http://", 7) != 0 && strncmp(endpoint, "https://", 8) != 0) ||
        strlen(endpoint) > 2048 || strpbrk(endpoint, " \t\r\n")) {
        drv_problems_add(problems, "engine.telemetry.otlp.endpoint",
                         "must be the collector's http:// or https:// address, e.g. http://otel-collector:4318 "
                         "(http) or http://otel-collector:4317 (grpc)");
    }
    const char *protocol = json_string_value(json_object_get(otlp, "protocol"));
    if (json_object_get(otlp, "protocol") && (!protocol || (strcmp(protocol, "http") && strcmp(protocol, "grpc")))) {
        drv_problems_add(problems, "engine.telemetry.otlp.protocol", "must be http or grpc");
    }
    json_t *headers = json_object_get(otlp, "headers");
    if (headers && !json_is_object(headers)) {
        drv_problems_add(problems, "engine.telemetry.otlp.headers", "must be a map of header names to strings");
    }
    const char *name;
    json_t *value;
    json_object_foreach(headers, name, value)
    {
        char err[300];
        const char *text = json_string_value(value);
        if (!text || !name[0] || strpbrk(name, ": \t\r\n") || strpbrk(text, "\r\n")) {
            drv_problems_add(problems, "engine.telemetry.otlp.headers",
                             "%s: must be a header name and a one-line string", name);
        } else if (drv_secret_check(text, NULL, NULL, NULL, err, sizeof err) != 0) {
            drv_problems_add(problems, "engine.telemetry.otlp.headers", "%s: %s", name, err);
        }
    }
    json_t *interval = json_object_get(otlp, "interval_secs");
    if (interval &&
        (!json_is_integer(interval) || json_integer_value(interval) < 1 || json_integer_value(interval) > 3600)) {
        drv_problems_add(problems, "engine.telemetry.otlp.interval_secs", "must be an integer from 1 to 3600");
    }
    json_t *queued = json_object_get(otlp, "max_queued_logs");
    if (queued &&
        (!json_is_integer(queued) || json_integer_value(queued) < 10 || json_integer_value(queued) > 1000000)) {
        drv_problems_add(problems, "engine.telemetry.otlp.max_queued_logs", "must be an integer from 10 to 1000000");
    }
    const char *flags[] = {"logs", "metrics"};
    for (int i = 0; i < 2; i++) {
        json_t *flag = json_object_get(otlp, flags[i]);
        if (flag && !json_is_boolean(flag)) {
            drv_problems_add(problems, i ? "engine.telemetry.otlp.metrics" : "engine.telemetry.otlp.logs",
                             "must be true or false");
        }
    }
    //  The normalized form: every key, defaults filled in.
    json_t *logs = json_object_get(otlp, "logs"), *metrics = json_object_get(otlp, "metrics");
    return json_pack("{s:s, s:s, s:o, s:I, s:b, s:b, s:I}", "endpoint", endpoint ? endpoint : "", "protocol",
                     protocol && !strcmp(protocol, "grpc") ? "grpc" : "http", "headers",
                     json_is_object(headers) ? json_deep_copy(headers) : json_object(), "interval_secs",
                     (json_int_t)(json_is_integer(interval) ? json_integer_value(interval) : 30), "logs",
                     logs ? json_is_true(logs) : true, "metrics", metrics ? json_is_true(metrics) : true,
                     "max_queued_logs", (json_int_t)(json_is_integer(queued) ? json_integer_value(queued) : 5000));
}
