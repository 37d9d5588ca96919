/*  drv_ctl_client — droverctl's side of the zmq admin socket: one request,
    one reply, with a deadline. */
#ifndef DRV_CTL_CLIENT_H
#define DRV_CTL_CLIENT_H

#include <czmq.h>
#include <jansson.h>

typedef struct {
    const char *endpoint;   // admin ROUTER
    const char *client_key; // zcert secret file for CURVE, or NULL
    const char *server_key; // server's public cert file (or Z85 key), or NULL
    int timeout_ms;
} drv_ctl_options_t;

//  Applies CURVE client settings to sock when keys are given. Returns 0 or -1.
int drv_ctl_secure(zsock_t *sock, const drv_ctl_options_t *options, char *err, size_t errlen);

//  Sends {method, path, query, body} and waits for {status, body}. Returns the
//  HTTP-style status (body in *reply_body, owned), or -1 with err set when the
//  engine could not be reached in time.
int drv_ctl_request(const drv_ctl_options_t *options, const char *method, const char *path,
                    json_t *query, json_t *body, json_t **reply_body, char *err, size_t errlen);

#endif
