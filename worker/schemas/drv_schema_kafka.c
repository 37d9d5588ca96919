/*  The Kafka kinds' shared keys (drv_schemas.h): receiver:kafka and
    exporter:kafka. brokers, tls and sasl, checked when a spec is validated
    (docs/operations.md, "Kafka"). */
#include "drv_schemas.h"

#include "drover/drv_secret.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static bool s_path_ok(const void *check, const char *path)
{
    return drv_spec_check_path_allowed(check, path);
}

//  host:port, the host a name, an IPv4 address or [IPv6], the port 1 to 65535.
static bool s_broker_ok(const char *text)
{
    const char *colon = text ? strrchr(text, ':') : NULL;
    if (!colon || colon == text || strlen(text) > 255) {
        return false;
    }
    for (const char *c = text; c < colon; c++) {
        if (!isalnum((unsigned char)*c) && !strchr(".-_[]:", *c)) {
            return false;
        }
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    return *end == 0 && port >= 1 && port <= 65535 && colon[1] != 0;
}

static void s_check_sasl(drv_spec_check_t *check, const char *node_path, const json_t *sasl)
{
    if (!sasl) {
        return;
    }
    if (!json_is_object(sasl)) {
        drv_spec_check_problem(check, node_path, "config.sasl: must be {mechanism, username, password}");
        return;
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)sasl, key, value)
    {
        if (strcmp(key, "mechanism") && strcmp(key, "username") && strcmp(key, "password")) {
            drv_spec_check_problem(check, node_path, "config.sasl.%s: unknown key (mechanism, username, password)",
                                   key);
        }
    }
    const char *mechanism = json_string_value(json_object_get(sasl, "mechanism"));
    if (!mechanism ||
        (strcmp(mechanism, "PLAIN") && strcmp(mechanism, "SCRAM-SHA-256") && strcmp(mechanism, "SCRAM-SHA-512"))) {
        drv_spec_check_problem(check, node_path, "config.sasl.mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512");
    }
    const char *names[] = {"username", "password"};
    for (int i = 0; i < 2; i++) {
        const char *text = json_string_value(json_object_get(sasl, names[i]));
        char why[300];
        if (!text || !text[0]) {
            drv_spec_check_problem(check, node_path, "config.sasl.%s: required, a string", names[i]);
        } else if (drv_secret_check(text, drv_spec_check_env_names(check), s_path_ok, check, why, sizeof why) != 0) {
            drv_spec_check_problem(check, node_path, "config.sasl.%s: %s", names[i], why);
        }
    }
}

void drv_kafka_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    json_t *brokers = json_object_get(config, "brokers");
    size_t i;
    json_t *broker;
    if (brokers && json_array_size(brokers) == 0) {
        drv_spec_check_problem(check, node_path, "config.brokers: at least one host:port");
    }
    json_array_foreach(brokers, i, broker)
    {
        if (!s_broker_ok(json_string_value(broker))) {
            drv_spec_check_problem(check, node_path, "config.brokers[%zu]: must be host:port", i);
        }
    }
    drv_tls_check(check, node_path, json_object_get(config, "tls"));
    s_check_sasl(check, node_path, json_object_get(config, "sasl"));
}
