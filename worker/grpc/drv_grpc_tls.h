/*  drv_grpc_tls — the OpenSSL side of gRPC: a server context from a
    certificate and key file that offers ALPN "h2" (and nothing else: gRPC
    is HTTP/2 only). */
#ifndef DRV_GRPC_TLS_H
#define DRV_GRPC_TLS_H

#include <stddef.h>

typedef struct ssl_ctx_st SSL_CTX;

//  NULL with the reason (the file, OpenSSL's words) in err.
SSL_CTX *drv_grpc_tls_server(const char *cert_file, const char *key_file, char *err, size_t errlen);

//  OpenSSL's last error as text into buf ("" when none); clears the queue.
const char *drv_grpc_tls_error(char *buf, size_t buflen);

#endif
