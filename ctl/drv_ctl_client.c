/*  drv_ctl_client — request/reply over a DEALER socket. */
#include "drv_ctl_client.h"

#include "drover/drv_mpjson.h"

#include <string.h>

int drv_ctl_secure(zsock_t *sock, const drv_ctl_options_t *options, char *err, size_t errlen)
{
    if (!options->client_key && !options->server_key) {
        return 0;
    }
    if (!options->client_key || !options->server_key) {
        snprintf(err, errlen, "CURVE needs both --key (your secret cert) and --server-key");
        return -1;
    }
    zcert_t *client = zcert_load(options->client_key);
    if (!client) {
        snprintf(err, errlen, "cannot load client certificate %s", options->client_key);
        return -1;
    }
    char server_key[41] = "";
    zcert_t *server = zcert_load(options->server_key);
    if (server) {
        snprintf(server_key, sizeof server_key, "%s", zcert_public_txt(server));
        zcert_destroy(&server);
    } else if (strlen(options->server_key) == 40) {
        snprintf(server_key, sizeof server_key, "%s", options->server_key);
    } else {
        snprintf(err, errlen, "--server-key: %s is neither a certificate file nor a Z85 key",
                 options->server_key);
        zcert_destroy(&client);
        return -1;
    }
    zcert_apply(client, sock);
    zsock_set_curve_serverkey(sock, server_key);
    zcert_destroy(&client);
    return 0;
}

int drv_ctl_request(const drv_ctl_options_t *options, const char *method, const char *path,
                    json_t *query, json_t *body, json_t **reply_body, char *err, size_t errlen)
{
    *reply_body = NULL;
    zsock_t *sock = zsock_new(ZMQ_DEALER);
    zsock_set_linger(sock, 0);
    int status = -1;
    if (drv_ctl_secure(sock, options, err, errlen) != 0) {
        goto done;
    }
    if (zsock_connect(sock, "%s", options->endpoint) != 0) {
        snprintf(err, errlen, "cannot connect to %s", options->endpoint);
        goto done;
    }
    json_t *request = json_pack("{s:s, s:s}", "method", method, "path", path);
    if (query) {
        json_object_set(request, "query", query);
    }
    if (body) {
        json_object_set(request, "body", body);
    }
    char *data;
    size_t size;
    drv_mpjson_encode(request, &data, &size);
    json_decref(request);
    zmq_send(zsock_resolve(sock), data, size, 0);
    free(data);
    zmq_pollitem_t item = {zsock_resolve(sock), 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, options->timeout_ms) <= 0) {
        snprintf(err, errlen, "no answer from %s within %d ms (is droverd running? see -e)",
                 options->endpoint, options->timeout_ms);
        goto done;
    }
    zframe_t *frame = zframe_recv(sock);
    char why[200];
    json_t *reply = frame ? drv_mpjson_decode(zframe_data(frame), zframe_size(frame), why, sizeof why) : NULL;
    zframe_destroy(&frame);
    if (!reply || !json_is_integer(json_object_get(reply, "status"))) {
        snprintf(err, errlen, "malformed reply from %s", options->endpoint);
        json_decref(reply);
        goto done;
    }
    status = (int)json_integer_value(json_object_get(reply, "status"));
    *reply_body = json_incref(json_object_get(reply, "body"));
    json_decref(reply);
done:
    zsock_destroy(&sock);
    return status;
}
