/*  For unit tests that serve HTTP: a listening, non-blocking TCP socket on
    127.0.0.1 at a port the kernel picks. */
#ifndef TEST_LOOPBACK_H
#define TEST_LOOPBACK_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

//  The socket, and its port in *port; -1 when the kernel refuses.
static inline int test_loopback_listen(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &len) != 0 || listen(fd, 16) != 0) {
        return -1;
    }
    *port = ntohs(addr.sin_port);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

#endif
