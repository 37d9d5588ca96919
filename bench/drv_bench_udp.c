/*  drover-bench's syslog side (B10).

      udp-send HOST PORT SECONDS
          sends RFC 5424 datagrams (~150 bytes) with sendmmsg as fast as the
          socket takes them, for SECONDS; prints datagrams sent.
      udp-recv PORT SECONDS
          the limit: binds 127.0.0.1:PORT and reads with recvmmsg, doing
          nothing else, for SECONDS; prints datagrams/s after the first. */
#include "drv_bench.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define VLEN 64

static const char s_line[] = "<134>1 2026-11-23T10:00:00.123Z web-17 nginx 4242 ID47 [req@32473 id=\"7f3a\" ms=\"12\"] "
                             "GET /api/v1/items/42 served in 12 ms";

int drv_bench_udp_send(const char *host, int port, double seconds)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &to.sin_addr);
    struct mmsghdr msgs[VLEN];
    struct iovec iov[VLEN];
    memset(msgs, 0, sizeof msgs);
    for (int i = 0; i < VLEN; i++) {
        iov[i] = (struct iovec){(void *)s_line, sizeof s_line - 1};
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = &to;
        msgs[i].msg_hdr.msg_namelen = sizeof to;
    }
    long sent = 0;
    double end = drv_bench_now() + seconds;
    while (drv_bench_now() < end) {
        int n = sendmmsg(fd, msgs, VLEN, 0);
        sent += n > 0 ? n : 0;
    }
    printf("sent_datagrams=%ld bytes_per_datagram=%zu\n", sent, sizeof s_line - 1);
    close(fd);
    return 0;
}

int drv_bench_udp_recv(int port, double seconds)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    int size = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &at.sin_addr);
    if (bind(fd, (struct sockaddr *)&at, sizeof at) != 0) {
        perror("bind");
        return 1;
    }
    struct timeval tick = {0, 100000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof tick);
    static char bufs[VLEN][2048];
    struct mmsghdr msgs[VLEN];
    struct iovec iov[VLEN];
    memset(msgs, 0, sizeof msgs);
    for (int i = 0; i < VLEN; i++) {
        iov[i] = (struct iovec){bufs[i], sizeof bufs[i]};
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    double start = drv_bench_now(), warm = start + 1, end = start + seconds, t0 = 0;
    long counted = 0;
    while (drv_bench_now() < end) {
        int n = recvmmsg(fd, msgs, VLEN, MSG_WAITFORONE, NULL);
        if (n > 0 && drv_bench_now() >= warm) {
            t0 = t0 ? t0 : drv_bench_now();
            counted += n;
        }
    }
    double elapsed = drv_bench_now() - (t0 ? t0 : warm);
    printf("datagrams_per_sec=%.0f\n", counted / (elapsed > 0 ? elapsed : 1));
    close(fd);
    return 0;
}
