/*  drv_grpc_tls — see drv_grpc_tls.h. */
#include "drv_grpc_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>

static int s_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                  unsigned int inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    for (unsigned int at = 0; at < inlen; at += 1u + in[at]) {
        if (in[at] == 2 && at + 3 <= inlen && !memcmp(in + at + 1, "h2", 2)) {
            *out = in + at + 1;
            *outlen = 2;
            return SSL_TLSEXT_ERR_OK;
        }
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL; // no h2: no gRPC
}

const char *drv_grpc_tls_error(char *buf, size_t buflen)
{
    unsigned long code = ERR_get_error();
    buf[0] = 0;
    if (code) {
        ERR_error_string_n(code, buf, buflen);
    }
    ERR_clear_error();
    return buf;
}

SSL_CTX *drv_grpc_tls_server(const char *cert_file, const char *key_file, char *err, size_t errlen)
{
    char why[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        snprintf(err, errlen, "TLS: %s", drv_grpc_tls_error(why, sizeof why));
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); // HTTP/2 forbids older ones
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        snprintf(err, errlen, "tls.cert_file %s: %s", cert_file, drv_grpc_tls_error(why, sizeof why));
    } else if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
        snprintf(err, errlen, "tls.key_file %s: %s", key_file, drv_grpc_tls_error(why, sizeof why));
    } else if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "tls.key_file %s does not match tls.cert_file %s", key_file, cert_file);
    } else {
        SSL_CTX_set_alpn_select_cb(ctx, s_alpn, NULL);
        return ctx;
    }
    SSL_CTX_free(ctx);
    return NULL;
}
