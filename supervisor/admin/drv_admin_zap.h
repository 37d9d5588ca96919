/*  drv_admin_zap — ZeroMQ authentication (ZAP, RFC 27) for the CURVE admin
    sockets, answered on droverd's loop instead of in czmq's zauth thread.
    A client is let in when a certificate in clients_dir holds its public
    key (zcertstore: the directory is read again when it changes, so a key
    added or removed counts from the next handshake). */
#ifndef DRV_ADMIN_ZAP_H
#define DRV_ADMIN_ZAP_H

#include <czmq.h>

typedef struct drv_admin_zap_t drv_admin_zap_t;

//  Binds the ZAP endpoint of this process's zmq context. NULL with the reason in err.
drv_admin_zap_t *drv_admin_zap_new(const char *clients_dir, char *err, size_t errlen);
void drv_admin_zap_destroy(drv_admin_zap_t **self_p);
//  The socket for the loop's poll, and what to do when it is readable.
zsock_t *drv_admin_zap_socket(drv_admin_zap_t *self);
void drv_admin_zap_on_readable(drv_admin_zap_t *self);

#endif
