/*  drv_ctl_client — droverctl's side of the admin API: one request, one
    reply, with a deadline, over the zmq admin socket (tcp://, ipc://) or
    the HTTP admin (http://, https://: the same routes, bodies and
    statuses; the token as a Bearer header). */
#ifndef DRV_CTL_CLIENT_H
#define DRV_CTL_CLIENT_H

#include <czmq.h>
#include <jansson.h>

typedef struct {
    const char *endpoint;   // admin ROUTER
    const char *client_key; // zcert secret file for CURVE, or NULL
    const char *server_key; // server's public cert file (or Z85 key), or NULL
    const char *token;      // HTTP: the admin token (--token, $DROVER_TOKEN), or NULL
    const char *accept;     // HTTP: the Accept header (NULL: application/json)
    int timeout_ms;
} drv_ctl_options_t;

//  Applies CURVE client settings to sock when keys are given. Returns 0 or -1.
int drv_ctl_secure(zsock_t *sock, const drv_ctl_options_t *options, char *err, size_t errlen);

//  Sends {method, path, query, body} and waits for {status, body}. Returns the
//  HTTP-style status (body in *reply_body, owned), or -1 with err set when the
//  engine could not be reached in time.
int drv_ctl_request(const drv_ctl_options_t *options, const char *method, const char *path, json_t *query, json_t *body,
                    json_t **reply_body, char *err, size_t errlen);

//  True for an http:// or https:// endpoint.
bool drv_ctl_is_http(const char *endpoint);

//  HTTP: GET path as a stream, calling line for each line of the answer
//  (without its LF) until it returns false, the answer ends or for_ms
//  passes (-1: no end) or *stop is set. Returns the status, or -1 with err.
typedef bool(drv_ctl_line_fn)(void *arg, const char *line, size_t len);
int drv_ctl_http_stream(const drv_ctl_options_t *options, const char *path, json_t *query, long for_ms,
                        volatile int *stop, drv_ctl_line_fn *line, void *arg, char *err, size_t errlen);

#endif
