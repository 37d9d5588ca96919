/*  drover-bench rw-loop and rw-post: Prometheus remote write (B32,
    docs/benchmarks.md). rw-loop is the limit drover is measured against:
    the request snappy-uncompressed, unpacked, packed and compressed again
    with protobuf-c and libsnappy, in a loop. rw-post posts the same
    request to a remote-write endpoint as fast as it answers 2xx. */
#include "drv_bench.h"

#include "prometheus/remote.pb-c.h"

#include <curl/curl.h>
#include <snappy-c.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  A snappy WriteRequest of series series, each of samples samples, as a scrape of a node makes them.
static char *s_request(int series, int samples, size_t *size)
{
    Prometheus__WriteRequest request = PROMETHEUS__WRITE_REQUEST__INIT;
    request.n_timeseries = (size_t)series;
    request.timeseries = calloc((size_t)series, sizeof *request.timeseries);
    char names[4][64];
    for (int s = 0; s < series; s++) {
        Prometheus__TimeSeries *ts = calloc(1, sizeof *ts);
        prometheus__time_series__init(ts);
        ts->n_labels = 4;
        ts->labels = calloc(4, sizeof *ts->labels);
        const char *keys[4] = {"__name__", "cpu", "instance", "job"};
        snprintf(names[0], sizeof names[0], "node_cpu_seconds_total");
        snprintf(names[1], sizeof names[1], "%d", s);
        snprintf(names[2], sizeof names[2], "10.0.0.1:9100");
        snprintf(names[3], sizeof names[3], "node");
        for (int l = 0; l < 4; l++) {
            ts->labels[l] = calloc(1, sizeof *ts->labels[l]);
            prometheus__label__init(ts->labels[l]);
            ts->labels[l]->name = strdup(keys[l]);
            ts->labels[l]->value = strdup(names[l]);
        }
        ts->n_samples = (size_t)samples;
        ts->samples = calloc((size_t)samples, sizeof *ts->samples);
        for (int k = 0; k < samples; k++) {
            ts->samples[k] = calloc(1, sizeof *ts->samples[k]);
            prometheus__sample__init(ts->samples[k]);
            ts->samples[k]->value = 1000.0 + s + k * 0.5;
            ts->samples[k]->timestamp = 1795900000000 + k * 1000;
        }
        request.timeseries[s] = ts;
    }
    size_t packed_size = prometheus__write_request__get_packed_size(&request);
    uint8_t *packed = malloc(packed_size);
    prometheus__write_request__pack(&request, packed);
    size_t room = snappy_max_compressed_length(packed_size);
    char *out = malloc(room);
    *size = room;
    snappy_compress((const char *)packed, packed_size, out, size);
    free(packed);
    for (int s = 0; s < series; s++) {
        Prometheus__TimeSeries *ts = request.timeseries[s];
        for (size_t l = 0; l < ts->n_labels; l++) {
            free(ts->labels[l]->name);
            free(ts->labels[l]->value);
            free(ts->labels[l]);
        }
        for (size_t k = 0; k < ts->n_samples; k++) {
            free(ts->samples[k]);
        }
        free(ts->labels);
        free(ts->samples);
        free(ts);
    }
    free(request.timeseries);
    return out;
}

int drv_bench_rw_loop(double seconds, int series, int samples)
{
    size_t size;
    char *wire = s_request(series, samples, &size);
    size_t plain_size = 0;
    snappy_uncompressed_length(wire, size, &plain_size);
    char *plain = malloc(plain_size);
    uint8_t *again = malloc(plain_size);
    char *compressed = malloc(snappy_max_compressed_length(plain_size));
    long loops = 0;
    double start = drv_bench_now(), end = start + seconds;
    while (drv_bench_now() < end) {
        size_t length = plain_size, out = snappy_max_compressed_length(plain_size);
        snappy_uncompress(wire, size, plain, &length);
        Prometheus__WriteRequest *request = prometheus__write_request__unpack(NULL, length, (const uint8_t *)plain);
        size_t n = prometheus__write_request__pack(request, again);
        prometheus__write_request__free_unpacked(request, NULL);
        snappy_compress((const char *)again, n, compressed, &out);
        loops++;
    }
    double elapsed = drv_bench_now() - start;
    printf("samples_per_sec=%.0f request_bytes=%zu samples_per_request=%d\n", loops * series * samples / elapsed, size,
           series * samples);
    free(compressed);
    free(again);
    free(plain);
    free(wire);
    return 0;
}

static size_t s_discard(char *data, size_t size, size_t n, void *arg)
{
    (void)data, (void)arg;
    return size * n;
}

int drv_bench_rw_post(const char *url, double seconds, int connections, int series, int samples)
{
    size_t size;
    char *wire = s_request(series, samples, &size);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/x-protobuf");
    headers = curl_slist_append(headers, "Content-Encoding: snappy");
    headers = curl_slist_append(headers, "X-Prometheus-Remote-Write-Version: 0.1.0");
    headers = curl_slist_append(headers, "Expect:");
    long ok = 0, failed = 0;
    double start = drv_bench_now(), end = start + seconds;
    int running = 0;
    CURL **handles = calloc((size_t)connections, sizeof *handles);
    //  A refused request is sent again after a backoff, as Prometheus' queue
    //  manager does (30 ms doubling, here up to 1 s; reset by a success):
    //  a sender that hammered would measure the refusals.
    double *backoff = calloc((size_t)connections, sizeof *backoff), *again = calloc((size_t)connections, sizeof *again);
    bool *busy = calloc((size_t)connections, sizeof *busy);
    for (int i = 0; i < connections; i++) {
        handles[i] = curl_easy_init();
        curl_easy_setopt(handles[i], CURLOPT_URL, url);
        curl_easy_setopt(handles[i], CURLOPT_POSTFIELDS, wire);
        curl_easy_setopt(handles[i], CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)size);
        curl_easy_setopt(handles[i], CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(handles[i], CURLOPT_WRITEFUNCTION, s_discard);
        curl_easy_setopt(handles[i], CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(handles[i], CURLOPT_TIMEOUT_MS, 10000L);
    }
    for (;;) {
        double now = drv_bench_now();
        int in_flight = 0;
        for (int i = 0; i < connections; i++) {
            if (!busy[i] && now < end && now >= again[i]) {
                curl_multi_add_handle(multi, handles[i]);
                busy[i] = true;
            }
            in_flight += busy[i];
        }
        if (!in_flight && now >= end) {
            break;
        }
        curl_multi_perform(multi, &running);
        CURLMsg *message;
        int left;
        while ((message = curl_multi_info_read(multi, &left))) {
            long status = 0;
            int i = 0;
            curl_easy_getinfo(message->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            while (handles[i] != message->easy_handle) {
                i++;
            }
            if (message->data.result == CURLE_OK && status >= 200 && status < 300) {
                ok++;
                backoff[i] = 0;
            } else {
                failed++;
                backoff[i] = backoff[i] ? (backoff[i] * 2 < 1 ? backoff[i] * 2 : 1) : 0.03;
                again[i] = drv_bench_now() + backoff[i];
            }
            curl_multi_remove_handle(multi, message->easy_handle);
            busy[i] = false;
        }
        curl_multi_poll(multi, NULL, 0, 5, NULL);
    }
    double elapsed = drv_bench_now() - start;
    printf("requests_ok=%ld failed=%ld samples_per_sec=%.0f\n", ok, failed, ok * series * samples / elapsed);
    for (int i = 0; i < connections; i++) {
        curl_easy_cleanup(handles[i]);
    }
    free(handles);
    free(backoff);
    free(again);
    free(busy);
    curl_slist_free_all(headers);
    curl_multi_cleanup(multi);
    free(wire);
    return 0;
}
