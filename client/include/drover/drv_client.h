/*  libdrover-client — send records to a drover `receiver:zmq` with `ack: true`
    and know they were exported.

    Wire protocol (schemas/ingest.md): a DEALER sends [message id][payload]; the
    broker answers [message id][{ok: true}] once every record in the payload is
    exported, or [message id][{ok: false, error}] at once for a payload that is
    not a msgpack map or array of maps. Delivery is at least once: a message
    whose ack does not come is sent again with the same id. */
#ifndef DRV_CLIENT_H
#define DRV_CLIENT_H

#include <stddef.h>
#include <stdint.h>

typedef struct drv_client_t drv_client_t;

//  Connects to endpoint (tcp:// or ipc://). Returns NULL on a bad endpoint.
drv_client_t *drv_client_new(const char *endpoint);
void drv_client_destroy(drv_client_t **self_p);

//  How long to wait for an ack before sending again (default 1000 ms).
void drv_client_set_retry_ms(drv_client_t *self, int retry_ms);

//  Sends one message (msgpack: a map, or an array of maps) and waits until it
//  is acknowledged, resending every retry_ms, for at most timeout_ms.
//  Returns 0 acknowledged, -1 timed out (err says so), -2 refused (err says why).
int drv_client_send(drv_client_t *self, const void *data, size_t size, int timeout_ms, char *err, size_t errlen);

//  Messages sent again because an ack did not come in time.
uint64_t drv_client_retries(const drv_client_t *self);

#endif
