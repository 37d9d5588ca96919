/*  drv_msg_send — sending one control message. */
#include "drover/drv_msg_send.h"

#include "drover/drv_log.h"

#include <stdlib.h>
#include <string.h>

int drv_msg_send(zsock_t *sock, const char *identity, const drv_msg_t *msg, bool dontwait)
{
    char *data;
    size_t size;
    if (drv_msg_encode(msg, &data, &size) != 0) {
        drv_error("cannot encode %s", drv_msg_type_name(msg->type));
        return -1;
    }
    void *handle = zsock_resolve(sock);
    int flags = dontwait ? ZMQ_DONTWAIT : 0;
    int rc = 0;
    if (identity) {
        rc = zmq_send(handle, identity, strlen(identity), ZMQ_SNDMORE | flags);
    }
    if (rc >= 0) {
        rc = zmq_send(handle, data, size, flags);
    }
    free(data);
    return rc < 0 ? -1 : 0;
}
