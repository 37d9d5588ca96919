/*  drv_listen — the listening sockets of network receivers (docs/operations.md):
    droverd binds each endpoint once per pipeline and every instance inherits
    it; an instance finds its copy by the address it is bound to. */
#ifndef DRV_LISTEN_H
#define DRV_LISTEN_H

#include <jansson.h>
#include <stddef.h>

typedef enum { DRV_LISTEN_UDP = 0, DRV_LISTEN_TCP } drv_listen_type_t;

typedef struct {
    drv_listen_type_t type;
    char host[256]; // an address or a name; [v6] without the brackets
    char port[8];
} drv_listen_endpoint_t;

//  "udp://host:port" or "tcp://host:port" (IPv6 as [addr]:port). Returns 0,
//  or -1 with what is wrong in why.
int drv_listen_parse(const char *endpoint, drv_listen_endpoint_t *out, char *why, size_t whylen);

//  Binds endpoint (close-on-exec, non-blocking; TCP also listens). Returns
//  the descriptor, or -1 with "udp://...: bind: <errno text>" in why.
int drv_listen_bind(const char *endpoint, char *why, size_t whylen);

//  The inherited descriptor bound to endpoint (made close-on-exec), or -1
//  with why.
int drv_listen_inherited(const char *endpoint, char *why, size_t whylen);
//  From now on drv_listen_inherited gives an unbound socket of the right
//  kind (a probe process: droverd probes the endpoints itself).
void drv_listen_probe(void);

//  The endpoints a spec's network receivers listen on (strings), new reference.
json_t *drv_listen_endpoints(const json_t *spec);

#endif
