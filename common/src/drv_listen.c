/*  drv_listen — see drv_listen.h. */
#include "drover/drv_listen.h"
#include "drover/drv_spec.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define UDP_RCVBUF (4 << 20) // room for bursts while an instance is busy (capped by net.core.rmem_max)
#define MAX_INHERITED_FD 1024

int drv_listen_parse(const char *endpoint, drv_listen_endpoint_t *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    const char *rest;
    if (!strncmp(endpoint, "udp://", 6)) {
        out->type = DRV_LISTEN_UDP;
        rest = endpoint + 6;
    } else if (!strncmp(endpoint, "tcp://", 6)) {
        out->type = DRV_LISTEN_TCP;
        rest = endpoint + 6;
    } else if (!strstr(endpoint, "://")) {
        out->type = DRV_LISTEN_TCP; // host:port, as HTTP receivers take it
        rest = endpoint;
    } else {
        snprintf(why, whylen, "must be host:port, udp://host:port or tcp://host:port");
        return -1;
    }
    const char *colon;
    size_t host_len;
    if (rest[0] == '[') {
        const char *close = strchr(rest, ']');
        if (!close || close[1] != ':') {
            snprintf(why, whylen, "an IPv6 address is written [addr]:port");
            return -1;
        }
        host_len = (size_t)(close - rest - 1);
        memcpy(out->host, rest + 1, host_len < sizeof out->host ? host_len : 0);
        colon = close + 1;
    } else {
        colon = strrchr(rest, ':');
        host_len = colon ? (size_t)(colon - rest) : 0;
        if (host_len < sizeof out->host) {
            memcpy(out->host, rest, host_len);
        }
    }
    if (!colon || host_len == 0 || host_len >= sizeof out->host) {
        snprintf(why, whylen, "needs a host and a port (udp://0.0.0.0:514)");
        return -1;
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (colon[1] == 0 || *end || port < 1 || port > 65535) {
        snprintf(why, whylen, "port must be 1 to 65535");
        return -1;
    }
    snprintf(out->port, sizeof out->port, "%ld", port);
    return 0;
}

static struct addrinfo *s_resolve(const char *endpoint, drv_listen_endpoint_t *ep, char *why, size_t whylen)
{
    if (drv_listen_parse(endpoint, ep, why, whylen) != 0) {
        return NULL;
    }
    struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
                             .ai_socktype = ep->type == DRV_LISTEN_UDP ? SOCK_DGRAM : SOCK_STREAM};
    struct addrinfo *found = NULL;
    int rc = getaddrinfo(ep->host, ep->port, &hints, &found);
    if (rc != 0) {
        snprintf(why, whylen, "%s: %s", endpoint, gai_strerror(rc));
        return NULL;
    }
    return found;
}

int drv_listen_bind(const char *endpoint, char *why, size_t whylen)
{
    drv_listen_endpoint_t ep;
    struct addrinfo *ai = s_resolve(endpoint, &ep, why, whylen);
    if (!ai) {
        return -1;
    }
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1, rcvbuf = UDP_RCVBUF;
    const char *step = "socket";
    if (fd >= 0) {
        if (ep.type == DRV_LISTEN_UDP) {
            //  No SO_REUSEADDR: for UDP, Linux would let a second socket bind
            //  the same port and quietly take its datagrams.
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
        } else {
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one); // past TIME_WAIT
        }
        step = "bind";
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            step = "listen";
            if (ep.type == DRV_LISTEN_UDP || listen(fd, SOMAXCONN) == 0) {
                freeaddrinfo(ai);
                return fd;
            }
        }
    }
    snprintf(why, whylen, "%s: %s: %s", endpoint, step, strerror(errno));
    if (fd >= 0) {
        close(fd);
    }
    freeaddrinfo(ai);
    return -1;
}

static int s_same_address(const struct sockaddr *a, const struct sockaddr *b)
{
    if (a->sa_family != b->sa_family) {
        return 0;
    }
    if (a->sa_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
        return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    if (a->sa_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
        return x->sin6_port == y->sin6_port && !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr);
    }
    return 0;
}

static bool s_probe = false;

void drv_listen_probe(void)
{
    s_probe = true;
}

int drv_listen_inherited(const char *endpoint, char *why, size_t whylen)
{
    drv_listen_endpoint_t ep;
    struct addrinfo *ai = s_resolve(endpoint, &ep, why, whylen);
    if (!ai) {
        return -1;
    }
    if (s_probe) {
        //  droverd binds (and probes) the endpoints; the node gets a socket
        //  of the right kind that nothing will ever read.
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
        freeaddrinfo(ai);
        if (fd < 0) {
            snprintf(why, whylen, "%s: socket: %s", endpoint, strerror(errno));
        }
        return fd;
    }
    for (int fd = 3; fd < MAX_INHERITED_FD; fd++) {
        int type = 0;
        socklen_t len = sizeof type;
        struct sockaddr_storage bound;
        socklen_t blen = sizeof bound;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == ai->ai_socktype &&
            getsockname(fd, (struct sockaddr *)&bound, &blen) == 0 &&
            s_same_address((struct sockaddr *)&bound, ai->ai_addr)) {
            fcntl(fd, F_SETFD, FD_CLOEXEC);
            freeaddrinfo(ai);
            return fd;
        }
    }
    freeaddrinfo(ai);
    snprintf(why, whylen, "%s: no socket from droverd bound to it", endpoint);
    return -1;
}

json_t *drv_listen_endpoints(const json_t *spec)
{
    json_t *receivers = drv_spec_receivers(spec, NULL);
    json_t *list = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(receivers, i, r)
    {
        if (strcmp(json_string_value(json_object_get(r, "type")), "receiver:zmq") != 0) {
            json_array_append(list, json_object_get(r, "endpoint")); // zmq's are the broker's
        }
    }
    json_decref(receivers);
    return list;
}
