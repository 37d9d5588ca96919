/*  drv_http_node — see drv_http_node.h. */
#include "drv_http_node.h"

#include "drover/drv_listen.h"

#include <stdio.h>
#include <unistd.h>

static drv_http_server_t *s_server(drv_node_t *node)
{
    return node->state ? *(drv_http_server_t **)node->state : NULL;
}

static int64_t s_input(void *arg)
{
    return drv_node_taken(arg);
}

static bool s_gave_up(void *arg, int64_t input)
{
    return drv_node_input_gave_up(arg, input);
}

static const char *s_backlogged(void *arg)
{
    if (!drv_node_backlogged(arg)) {
        return NULL;
    }
    return drv_node_buffered(arg) ? "the disk buffer is full" : "the exporters are behind";
}

static void s_answered(void *arg, double secs)
{
    drv_node_observe(arg, secs);
}

static void s_refused(void *arg)
{
    drv_node_count_refused(arg);
}

//  The socket droverd bound for config[key], or -1 with the reason in err.
static int s_inherited(drv_node_t *node, const json_t *config, const char *key, char *err, size_t errlen)
{
    char why[300];
    int fd = drv_listen_inherited(json_string_value(json_object_get(config, key)), why, sizeof why);
    if (fd < 0) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
    }
    return fd;
}

//  With a disk buffer every answer waits: for the log's sync (ack: false) or the export.
static bool s_ack(drv_node_t *node, const json_t *config)
{
    return json_is_true(json_object_get(config, "ack")) || drv_node_buffered(node);
}

//  The receiver's `connections` over the defaults (idle_secs differs by transport).
static int s_connections(drv_node_t *node, const json_t *config, int idle_secs, drv_conn_limits_t *limits, char *err,
                         size_t errlen)
{
    *limits = (drv_conn_limits_t){.per_address = DRV_HTTP_NODE_PER_ADDRESS,
                                  .total = DRV_HTTP_NODE_CONNECTIONS,
                                  .request_ms = DRV_HTTP_NODE_REQUEST_SECS * 1000,
                                  .idle_ms = (int64_t)idle_secs * 1000};
    char why[200];
    if (drv_conn_limits_config(json_object_get(config, "connections"), limits, why, sizeof why) != 0) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    return 0;
}

int drv_http_node_listen(drv_node_t *node, drv_http_server_t **server, const json_t *config,
                         drv_http_config_t *server_config, char *err, size_t errlen)
{
    int fd = s_inherited(node, config, "endpoint", err, errlen);
    if (fd < 0) {
        return -1;
    }
    server_config->max_body_bytes = (size_t)json_integer_value(json_object_get(config, "max_body_bytes"));
    server_config->buffer_bytes = DRV_HTTP_NODE_BUFFER_BYTES;
    if (s_connections(node, config, DRV_HTTP_NODE_IDLE_SECS, &server_config->connections, err, errlen) != 0) {
        close(fd);
        return -1;
    }
    json_t *tls = json_object_get(config, "tls");
    server_config->cert_file = json_string_value(json_object_get(tls, "cert_file"));
    server_config->key_file = json_string_value(json_object_get(tls, "key_file"));
    server_config->ack = s_ack(node, config);
    server_config->input = s_input;
    server_config->gave_up = s_gave_up;
    server_config->backlogged = s_backlogged;
    server_config->answered = s_answered;
    server_config->refused = s_refused;
    server_config->arg = node;
    char why[200];
    *server = drv_http_server_new(fd, server_config, why, sizeof why);
    if (!*server) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    return 0;
}

int drv_http_node_fd(drv_node_t *node)
{
    drv_http_server_t *server = s_server(node);
    return server ? drv_http_server_fd(server) : -1;
}

int drv_http_node_readable(drv_node_t *node)
{
    drv_http_server_t *server = s_server(node);
    if (server) {
        drv_http_server_run(server);
    }
    return 0; // what it emitted was counted as it went
}

int drv_http_node_listen_grpc(drv_node_t *node, drv_grpc_server_t **server, const json_t *config,
                              drv_grpc_config_t *server_config, char *err, size_t errlen)
{
    int fd = s_inherited(node, config, "grpc_endpoint", err, errlen);
    if (fd < 0) {
        return -1;
    }
    json_t *tls = json_object_get(config, "tls");
    server_config->cert_file = json_string_value(json_object_get(tls, "cert_file"));
    server_config->key_file = json_string_value(json_object_get(tls, "key_file"));
    server_config->max_message_bytes = (size_t)json_integer_value(json_object_get(config, "max_body_bytes"));
    server_config->buffer_bytes = DRV_HTTP_NODE_BUFFER_BYTES;
    if (s_connections(node, config, DRV_GRPC_IDLE_SECS, &server_config->connections, err, errlen) != 0) {
        close(fd);
        return -1;
    }
    server_config->ack = s_ack(node, config);
    server_config->input = s_input;
    server_config->gave_up = s_gave_up;
    server_config->backlogged = s_backlogged;
    server_config->answered = s_answered;
    server_config->arg = node;
    char why[300];
    *server = drv_grpc_server_new(fd, server_config, why, sizeof why);
    if (!*server) {
        snprintf(err, errlen, "node %s: grpc_endpoint: %s", node->id, why);
        return -1;
    }
    return 0;
}

int64_t drv_http_node_timeout_ms(drv_node_t *node)
{
    drv_http_server_t *server = s_server(node);
    return server ? drv_http_server_timeout_ms(server) : -1;
}

void drv_http_node_drain(drv_node_t *node)
{
    drv_http_server_t *server = s_server(node);
    if (server) {
        drv_http_server_drain(server);
    }
}

void drv_http_node_settled(drv_node_t *node, int64_t upto)
{
    drv_http_server_t *server = s_server(node);
    if (server) {
        drv_http_server_settled(server, upto);
    }
}
