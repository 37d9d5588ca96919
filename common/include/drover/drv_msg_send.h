/*  drv_msg_send — one control message onto a ZeroMQ socket, the same way in
    droverd, the broker and the worker: encoded with drv_msg_encode, after a
    routing-id frame when sent through a ROUTER. */
#ifndef DRV_MSG_SEND_H
#define DRV_MSG_SEND_H

#include "drover/drv_msg.h"

#include <czmq.h>
#include <stdbool.h>

//  identity: the peer's routing id on a ROUTER socket, or NULL. dontwait: fail
//  at once (EAGAIN, or EHOSTUNREACH on a mandatory ROUTER) instead of waiting
//  for room. Returns 0, or -1 (zmq_errno() says why; encoding failures are
//  logged).
int drv_msg_send(zsock_t *sock, const char *identity, const drv_msg_t *msg, bool dontwait);

#endif
