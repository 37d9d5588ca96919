/*  drover-produce ENDPOINT [--ack] [--batch N] [--timeout MS] — JSON lines
    from stdin, one record (a JSON object) per line, sent as msgpack batches
    of up to N records (100): a batch goes when it is full, or at once when
    stdin has nothing more ready (so a line typed by hand arrives when typed).

    Without --ack it PUSHes, as any zmq producer does to a receiver:zmq;
    at the end it waits up to the timeout for what is queued to go out.
    With --ack it uses libdrover-client: each batch is acknowledged by an
    ack-mode receiver:zmq before the next, resent as needed.

    A line that is not a JSON object is reported (line number, what was
    wrong) and skipped; the exit code is then 1. */
#include "producer.h"

#include "drover/drv_client.h"
#include "drover/drv_mpjson.h"

#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

typedef struct {
    void *ctx, *push;     // without --ack
    drv_client_t *client; // with --ack
    int timeout_ms;
    const char *endpoint;
    long sent, records;
} sink_t;

static bool s_stdin_ready(void)
{
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
}

//  Sends one batch; returns 0, or -1 after saying why.
static int s_send(sink_t *sink, json_t *batch)
{
    char *data;
    size_t size;
    if (drv_mpjson_encode(batch, &data, &size) != 0) {
        fprintf(stderr, "drover-produce: cannot encode a batch as msgpack\n");
        return -1;
    }
    int rc = 0;
    if (sink->client) {
        char err[256];
        rc = drv_client_send(sink->client, data, size, sink->timeout_ms, err, sizeof err);
        if (rc != 0) {
            fprintf(stderr, "drover-produce: batch %ld: %s\n", sink->sent, err);
        }
    } else if (zmq_send(sink->push, data, size, 0) < 0) {
        fprintf(stderr, "drover-produce: batch %ld not taken within %d ms: is a receiver:zmq listening at %s?\n",
                sink->sent, sink->timeout_ms, sink->endpoint);
        rc = -1;
    }
    free(data);
    if (rc == 0) {
        sink->sent++;
        sink->records += (long)json_array_size(batch);
    }
    json_array_clear(batch);
    return rc;
}

static int s_open(sink_t *sink, const char *endpoint, bool ack)
{
    if (ack) {
        sink->client = drv_client_new(endpoint);
        if (sink->client) {
            drv_client_set_retry_ms(sink->client, 500);
        }
        return sink->client ? 0 : -1;
    }
    sink->ctx = zmq_ctx_new();
    sink->push = zmq_socket(sink->ctx, ZMQ_PUSH);
    zmq_setsockopt(sink->push, ZMQ_SNDTIMEO, &sink->timeout_ms, sizeof sink->timeout_ms);
    zmq_setsockopt(sink->push, ZMQ_LINGER, &sink->timeout_ms, sizeof sink->timeout_ms);
    int immediate = 1; // queue only to a receiver that is there: none within the timeout is an error, not a silent loss
    zmq_setsockopt(sink->push, ZMQ_IMMEDIATE, &immediate, sizeof immediate);
    return zmq_connect(sink->push, endpoint);
}

static void s_close(sink_t *sink)
{
    if (sink->client) {
        drv_client_destroy(&sink->client);
    }
    if (sink->push) {
        zmq_close(sink->push); // lingers: what is queued still goes out
        zmq_ctx_term(sink->ctx);
    }
}

int drv_produce_stdin(int argc, char *argv[], volatile sig_atomic_t *stop)
{
    const char *endpoint = argv[1];
    bool ack = false;
    long batch_size = 100;
    sink_t sink = {.timeout_ms = 30000, .endpoint = endpoint};
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--ack")) {
            ack = true;
        } else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
            batch_size = atol(argv[++i]);
        } else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
            sink.timeout_ms = atoi(argv[++i]);
        } else {
            fprintf(stderr,
                    "drover-produce: unexpected \"%s\" (usage: drover-produce ENDPOINT [--ack] [--batch N] "
                    "[--timeout MS] < records.ndjson)\n",
                    argv[i]);
            return 2;
        }
    }
    if (batch_size < 1 || batch_size > 100000 || sink.timeout_ms < 1) {
        fprintf(stderr, "drover-produce: --batch takes 1 to 100000, --timeout milliseconds >= 1\n");
        return 2;
    }
    if (s_open(&sink, endpoint, ack) != 0) {
        fprintf(stderr, "drover-produce: cannot connect to %s: %s\n", endpoint, zmq_strerror(zmq_errno()));
        s_close(&sink);
        return 2;
    }
    json_t *batch = json_array();
    char *line = NULL;
    size_t capacity = 0;
    long number = 0, skipped = 0;
    int rc = 0;
    ssize_t length;
    while (!*stop && (length = getline(&line, &capacity, stdin)) >= 0) {
        number++;
        if (strspn(line, " \t\r\n") == (size_t)length) {
            continue; // blank
        }
        json_error_t err;
        json_t *record = json_loadb(line, (size_t)length, 0, &err);
        if (!json_is_object(record)) {
            fprintf(stderr, "drover-produce: line %ld skipped: %s\n", number,
                    record ? "expected a JSON object (one record per line)" : err.text);
            json_decref(record);
            skipped++;
            continue;
        }
        json_array_append_new(batch, record);
        if ((long)json_array_size(batch) >= batch_size || !s_stdin_ready()) {
            if (s_send(&sink, batch) != 0) {
                rc = 1;
                break;
            }
        }
    }
    if (rc == 0 && json_array_size(batch) > 0 && s_send(&sink, batch) != 0) {
        rc = 1;
    }
    free(line);
    json_decref(batch);
    s_close(&sink);
    printf("sent=%ld records=%ld skipped=%ld\n", sink.sent, sink.records, skipped);
    return rc ? rc : skipped ? 1 : 0;
}
