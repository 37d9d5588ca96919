/*  drv_kafka — see drv_kafka.h. */
#include "drv_kafka.h"

#include "drover/drv_log.h"
#include "drover/drv_secret.h"
#include "drover/drv_version.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int drv_kafka_set(rd_kafka_conf_t *conf, const char *name, const char *value, char *err, size_t errlen)
{
    char why[512];
    if (rd_kafka_conf_set(conf, name, value, why, sizeof why) != RD_KAFKA_CONF_OK) {
        snprintf(err, errlen, "%s: %s", name, why);
        return -1;
    }
    return 0;
}

void drv_kafka_log(const rd_kafka_t *rk, int level, const char *facility, const char *line)
{
    (void)rk;
    //  syslog levels: 0-3 are errors, 4 a warning, the rest said only when debugging.
    int ours = level <= 3 ? DRV_LOG_ERROR : level == 4 ? DRV_LOG_WARN : DRV_LOG_DEBUG;
    drv_log_write(ours, "kafka %s: %s", facility, line);
}

//  brokers: "host:port" strings, joined as librdkafka takes them.
static int s_brokers(rd_kafka_conf_t *conf, const json_t *brokers, char *err, size_t errlen)
{
    char list[4096] = "";
    size_t used = 0, i;
    json_t *broker;
    json_array_foreach(brokers, i, broker)
    {
        int n = snprintf(list + used, sizeof list - used, "%s%s", used ? "," : "", json_string_value(broker));
        if (n < 0 || (size_t)n >= sizeof list - used) {
            snprintf(err, errlen, "brokers: longer than %zu bytes in all", sizeof list);
            return -1;
        }
        used += (size_t)n;
    }
    return drv_kafka_set(conf, "bootstrap.servers", list, err, errlen);
}

static int s_sasl(rd_kafka_conf_t *conf, const json_t *sasl, char *err, size_t errlen)
{
    const char *mechanism = json_string_value(json_object_get(sasl, "mechanism"));
    const char *username = json_string_value(json_object_get(sasl, "username"));
    const char *password = json_string_value(json_object_get(sasl, "password"));
    char why[400];
    char *user = drv_secret_resolve(username ? username : "", why, sizeof why);
    char *secret = user ? drv_secret_resolve(password ? password : "", why, sizeof why) : NULL;
    int rc = user && secret ? 0 : -1;
    if (rc != 0) {
        snprintf(err, errlen, "sasl: %s", why);
    }
    rc = rc ? rc : drv_kafka_set(conf, "sasl.mechanism", mechanism ? mechanism : "PLAIN", err, errlen);
    rc = rc ? rc : drv_kafka_set(conf, "sasl.username", user, err, errlen);
    rc = rc ? rc : drv_kafka_set(conf, "sasl.password", secret, err, errlen);
    if (secret) {
        explicit_bzero(secret, strlen(secret));
    }
    free(user);
    free(secret);
    return rc;
}

rd_kafka_conf_t *drv_kafka_conf(const json_t *config, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    json_t *tls = json_object_get(config, "tls"), *sasl = json_object_get(config, "sasl");
    bool secure = json_is_object(tls), authenticated = json_is_object(sasl);
    const char *protocol = secure ? authenticated ? "sasl_ssl" : "ssl" : authenticated ? "sasl_plaintext" : "plaintext";
    const char *ca_file = json_string_value(json_object_get(tls, "ca_file"));
    int rc = s_brokers(conf, json_object_get(config, "brokers"), err, errlen);
    rc = rc ? rc : drv_kafka_set(conf, "security.protocol", protocol, err, errlen);
    if (rc == 0 && ca_file) {
        rc = drv_kafka_set(conf, "ssl.ca.location", ca_file, err, errlen);
    }
    if (rc == 0 && json_is_true(json_object_get(tls, "insecure_skip_verify"))) {
        rc = drv_kafka_set(conf, "enable.ssl.certificate.verification", "false", err, errlen);
    }
    if (rc == 0 && authenticated) {
        rc = s_sasl(conf, sasl, err, errlen);
    }
    //  Log lines wait on the main queue and are written by the loop.
    rc = rc ? rc : drv_kafka_set(conf, "log.queue", "true", err, errlen);
    char client_id[64];
    snprintf(client_id, sizeof client_id, "drover/%s", drv_version());
    rc = rc ? rc : drv_kafka_set(conf, "client.id", client_id, err, errlen);
    if (rc == 0 && getenv("DROVER_KAFKA_DEBUG")) {
        rc = drv_kafka_set(conf, "debug", getenv("DROVER_KAFKA_DEBUG"), err, errlen);
    }
    if (rc != 0) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_log_cb(conf, drv_kafka_log);
    return conf;
}

int drv_kafka_wake_init(drv_kafka_wake_t *wake, rd_kafka_queue_t *queue, char *err, size_t errlen)
{
    wake->queue = queue;
    if (pipe2(wake->fds, O_NONBLOCK | O_CLOEXEC) != 0) {
        wake->fds[0] = wake->fds[1] = -1;
        snprintf(err, errlen, "cannot make a pipe: %m");
        return -1;
    }
    rd_kafka_queue_io_event_enable(queue, wake->fds[1], "1", 1);
    return 0;
}

void drv_kafka_wake_clear(drv_kafka_wake_t *wake)
{
    char drained[256];
    while (read(wake->fds[0], drained, sizeof drained) > 0) {
    }
}

void drv_kafka_wake_fini(drv_kafka_wake_t *wake)
{
    if (wake->queue) {
        rd_kafka_queue_io_event_enable(wake->queue, -1, NULL, 0);
        rd_kafka_queue_destroy(wake->queue);
        wake->queue = NULL;
    }
    for (int i = 0; i < 2; i++) {
        if (wake->fds[i] >= 0) {
            close(wake->fds[i]);
        }
        wake->fds[i] = -1;
    }
}
