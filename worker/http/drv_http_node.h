/*  drv_http_node — what the HTTP receivers (receiver:http, receiver:otlp)
    share as node kinds: a drv_http_server_t on the socket droverd bound
    for config.endpoint, as the first member of the node's state, and the
    node hooks that serve it; and, for receiver:otlp's grpc_endpoint, a
    gRPC server under the same rules (acknowledgement, push back). */
#ifndef DRV_HTTP_NODE_H
#define DRV_HTTP_NODE_H

#include "drv_grpc_server.h"
#include "drv_http_server.h"
#include "drv_node.h"

//  Starts *server on the inherited socket of config.endpoint, taking
//  max_body_bytes from config; server_config gives the rest. Returns 0, or
//  -1 with the reason in err.
int drv_http_node_listen(drv_node_t *node, drv_http_server_t **server, const json_t *config,
                         drv_http_config_t *server_config, char *err, size_t errlen);

//  Starts *server on the inherited socket of config.grpc_endpoint, with
//  max_body_bytes, ack and tls {cert_file, key_file} from config, as above.
int drv_http_node_listen_grpc(drv_node_t *node, drv_grpc_server_t **server, const json_t *config,
                              drv_grpc_config_t *server_config, char *err, size_t errlen);

//  Node hooks; node->state starts with a drv_http_server_t *.
int drv_http_node_fd(drv_node_t *node);
int drv_http_node_readable(drv_node_t *node);
int64_t drv_http_node_timeout_ms(drv_node_t *node);
void drv_http_node_drain(drv_node_t *node);
void drv_http_node_settled(drv_node_t *node, int64_t upto);

//  The hooks above, for a kind's drv_node_kind_t.
#define DRV_HTTP_NODE_HOOKS                                                                                            \
    .fd = drv_http_node_fd, .readable = drv_http_node_readable, .timeout_ms = drv_http_node_timeout_ms,                \
    .drain = drv_http_node_drain, .settled = drv_http_node_settled

#define DRV_HTTP_NODE_BUFFER_BYTES (64u << 20) // bodies held at once by one instance
//  The `connections` defaults of receiver:http and receiver:otlp, per instance (docs/nodes.md).
#define DRV_HTTP_NODE_PER_ADDRESS 64   // connections one client address may hold
#define DRV_HTTP_NODE_CONNECTIONS 1024 // all together; past it the oldest stalled client is cut
#define DRV_HTTP_NODE_REQUEST_SECS 30  // a request's (a call's) time on the client's clock
#define DRV_HTTP_NODE_IDLE_SECS 30     // an HTTP connection with nothing to say is closed after this
#define DRV_GRPC_IDLE_SECS 300         // a gRPC connection with no call and nothing said

#endif
