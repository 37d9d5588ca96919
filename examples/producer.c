/*  drover-produce — an example producer built on libdrover-client.

    drover-produce ENDPOINT [--ack] [--batch N] < records.ndjson
        reads JSON lines from stdin and sends them as msgpack batches
        (producer_stdin.c): to a receiver:zmq (PUSH), or with --ack to an
        ack-mode one, each batch acknowledged before the next.

    drover-produce ENDPOINT COUNT [BATCH] [TIMEOUT_MS]
        sends COUNT messages of BATCH records {"seq": n, ...} to an ack-mode
        receiver:zmq, each acknowledged before the next (retrying as needed).
        SIGTERM stops it after the message in flight; it then prints what was
        acknowledged: records 0 .. acked*BATCH-1. */
#include "producer.h"

#include "drover/drv_client.h"

#include <msgpack.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static volatile sig_atomic_t s_stop = 0;

static void s_on_signal(int sig)
{
    (void)sig;
    s_stop = 1; // finish the message in flight, then report
}

void drv_produce_signals(void (*handler)(int))
{
    signal(SIGTERM, handler);
    signal(SIGINT, handler);
}

int main(int argc, char *argv[])
{
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: drover-produce ENDPOINT [--ack] [--batch N] < records.ndjson\n"
                        "       drover-produce ENDPOINT COUNT [BATCH] [TIMEOUT_MS]\n"
                        "e.g.:  echo '{\"msg\":\"hi\"}' | drover-produce tcp://127.0.0.1:5555\n");
        return 2;
    }
    if (argc == 2 || argv[2][0] == '-') {
        return drv_produce_stdin(argc, argv, &s_stop);
    }
    long count = atol(argv[2]);
    int batch = argc > 3 ? atoi(argv[3]) : 10;
    int timeout_ms = argc > 4 ? atoi(argv[4]) : 30000;
    drv_client_t *client = drv_client_new(argv[1]);
    if (!client) {
        fprintf(stderr, "drover-produce: cannot connect to %s\n", argv[1]);
        return 2;
    }
    drv_client_set_retry_ms(client, 500);
    drv_produce_signals(s_on_signal);
    long acked = 0;
    int rc = 0;
    for (long m = 0; m < count && !s_stop; m++) {
        msgpack_sbuffer sbuf;
        msgpack_sbuffer_init(&sbuf);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
        msgpack_pack_array(&pk, (size_t)batch);
        for (int i = 0; i < batch; i++) {
            msgpack_pack_map(&pk, 2);
            msgpack_pack_str_with_body(&pk, "seq", 3);
            msgpack_pack_int64(&pk, m * batch + i);
            msgpack_pack_str_with_body(&pk, "msg", 3);
            msgpack_pack_str_with_body(&pk, "hello", 5);
        }
        char err[256];
        int sent = drv_client_send(client, sbuf.data, sbuf.size, timeout_ms, err, sizeof err);
        msgpack_sbuffer_destroy(&sbuf);
        if (sent != 0) {
            fprintf(stderr, "drover-produce: message %ld: %s\n", m, err);
            rc = 1;
            break;
        }
        acked++;
    }
    printf("acked=%ld records=%ld retries=%llu\n", acked, acked * batch,
           (unsigned long long)drv_client_retries(client));
    drv_client_destroy(&client);
    return rc;
}
