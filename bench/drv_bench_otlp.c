/*  drover-bench's OTLP side (B9, B11, B12).

      otlp-post URL SECONDS CONNECTIONS RATE [RECORDS [LOG]]
          POSTs OTLP/HTTP protobuf logs requests of RECORDS (100) LogRecords
          of ~300 bytes each over CONNECTIONS keep-alive connections
          (libcurl multi), flat out (RATE 0) or RATE requests/s in all.
          At a fixed rate every record has its own `seq` attribute (request
          i holds seqs i*RECORDS ..) and LOG, when given, gets a line per
          request: "start_mono_s latency_ms status first_seq new_connections"
          (1 when the request had to open a connection). Prints
          requests, ok, failed, records and records/s.
      otlp-loop SECONDS [RECORDS]
          the limit: unpacks and packs the same request with protobuf-c in a
          loop on one core; prints logs/s. */
#include "drv_bench.h"
#include "drv_otlp.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BODY_TEXT                                                                                                      \
    "GET /api/v1/items/42 served in 12 ms for user 7f3a2c by web-17.example.internal; cache=miss "                     \
    "upstream=db-3 rows=17 bytes=4096 trace sampled; request accepted and answered with 200 OK after auth "            \
    "and validation passed"

uint8_t *drv_bench_otlp_logs_request(long first, int n, size_t *size)
{
    otlp_logs_request_t request = OPENTELEMETRY__PROTO__COLLECTOR__LOGS__V1__EXPORT_LOGS_SERVICE_REQUEST__INIT;
    otlp_resource_logs_t rl = OPENTELEMETRY__PROTO__LOGS__V1__RESOURCE_LOGS__INIT;
    otlp_resource_t resource = OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
    otlp_scope_logs_t sl = OPENTELEMETRY__PROTO__LOGS__V1__SCOPE_LOGS__INIT;
    otlp_scope_t scope = OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
    otlp_kv_t service = OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;
    otlp_any_t service_value = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
    otlp_kv_t *resource_attrs[] = {&service};
    service.key = "service.name";
    service.value = &service_value;
    service_value.value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
    service_value.string_value = "bench";
    resource.attributes = resource_attrs;
    resource.n_attributes = 1;
    scope.name = "drover-bench";
    otlp_log_t *logs = calloc((size_t)n, sizeof *logs);
    otlp_log_t **log_ptrs = calloc((size_t)n, sizeof *log_ptrs);
    otlp_any_t *bodies = calloc((size_t)n, sizeof *bodies);
    otlp_kv_t *seq = calloc((size_t)n, sizeof *seq);
    otlp_any_t *seq_values = calloc((size_t)n, sizeof *seq_values);
    otlp_kv_t **attrs = calloc((size_t)n, sizeof *attrs);
    static uint8_t trace_id[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    static uint8_t span_id[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int i = 0; i < n; i++) {
        otlp_log_t init = OPENTELEMETRY__PROTO__LOGS__V1__LOG_RECORD__INIT;
        otlp_any_t any = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
        otlp_kv_t kv = OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;
        logs[i] = init;
        bodies[i] = any;
        seq_values[i] = any;
        seq[i] = kv;
        bodies[i].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
        bodies[i].string_value = BODY_TEXT;
        seq_values[i].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
        seq_values[i].int_value = first + i;
        seq[i].key = "seq";
        seq[i].value = &seq_values[i];
        attrs[i] = &seq[i];
        logs[i].time_unix_nano = 1700000000000000000ULL + (uint64_t)(first + i);
        logs[i].severity_number = 9;
        logs[i].severity_text = "INFO";
        logs[i].body = &bodies[i];
        logs[i].attributes = &attrs[i];
        logs[i].n_attributes = 1;
        logs[i].trace_id = (ProtobufCBinaryData){16, trace_id};
        logs[i].span_id = (ProtobufCBinaryData){8, span_id};
        log_ptrs[i] = &logs[i];
    }
    sl.scope = &scope;
    sl.log_records = log_ptrs;
    sl.n_log_records = (size_t)n;
    otlp_scope_logs_t *sls[] = {&sl};
    rl.resource = &resource;
    rl.scope_logs = sls;
    rl.n_scope_logs = 1;
    otlp_resource_logs_t *rls[] = {&rl};
    request.resource_logs = rls;
    request.n_resource_logs = 1;
    *size = opentelemetry__proto__collector__logs__v1__export_logs_service_request__get_packed_size(&request);
    uint8_t *out = malloc(*size);
    opentelemetry__proto__collector__logs__v1__export_logs_service_request__pack(&request, out);
    free(logs);
    free(log_ptrs);
    free(bodies);
    free(seq);
    free(seq_values);
    free(attrs);
    return out;
}

void drv_bench_pb_loop(const ProtobufCMessageDescriptor *descriptor, const uint8_t *wire, size_t size, double seconds,
                       int items, const char *unit)
{
    uint8_t *again = malloc(size);
    long loops = 0;
    double start = drv_bench_now(), end = start + seconds;
    while (drv_bench_now() < end) {
        for (int i = 0; i < 64; i++) {
            ProtobufCMessage *request = protobuf_c_message_unpack(descriptor, NULL, size, wire);
            protobuf_c_message_pack(request, again);
            protobuf_c_message_free_unpacked(request, NULL);
            loops++;
        }
    }
    double elapsed = drv_bench_now() - start;
    printf("%s_per_sec=%.0f request_bytes=%zu %s_per_request=%d\n", unit, loops * items / elapsed, size, unit, items);
    free(again);
}

int drv_bench_otlp_loop(double seconds, int records)
{
    size_t size;
    uint8_t *wire = drv_bench_otlp_logs_request(0, records, &size);
    drv_bench_pb_loop(&opentelemetry__proto__collector__logs__v1__export_logs_service_request__descriptor, wire, size,
                      seconds, records, "logs");
    free(wire);
    return 0;
}

typedef struct {
    CURL *easy;
    uint8_t *body;
    size_t size;
    long first_seq;
    double started;
} slot_t;

static size_t s_discard(char *data, size_t size, size_t n, void *arg)
{
    (void)data;
    (void)arg;
    return size * n;
}

static void s_start(CURLM *multi, slot_t *slot, const char *url, struct curl_slist *headers)
{
    curl_easy_setopt(slot->easy, CURLOPT_URL, url);
    curl_easy_setopt(slot->easy, CURLOPT_POSTFIELDS, slot->body);
    curl_easy_setopt(slot->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)slot->size);
    curl_easy_setopt(slot->easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(slot->easy, CURLOPT_WRITEFUNCTION, s_discard);
    curl_easy_setopt(slot->easy, CURLOPT_PRIVATE, slot);
    curl_easy_setopt(slot->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(slot->easy, CURLOPT_TIMEOUT_MS, 10000L);
    slot->started = drv_bench_now();
    curl_multi_add_handle(multi, slot->easy);
}

int drv_bench_otlp_post(const char *url, double seconds, int connections, double rate, int records, const char *log)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)connections);
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/x-protobuf");
    headers = curl_slist_append(headers, "Expect:");
    FILE *out = log ? fopen(log, "w") : NULL;
    slot_t *slots = calloc((size_t)connections, sizeof *slots);
    size_t fixed_size;
    uint8_t *fixed = rate > 0 ? NULL : drv_bench_otlp_logs_request(0, records, &fixed_size);
    long sent = 0, ok = 0, failed = 0, ok_bytes = 0;
    double start = drv_bench_now(), end = start + seconds;
    int idle = connections, running = 0;
    for (int i = 0; i < connections; i++) {
        slots[i].easy = curl_easy_init();
    }
    while (drv_bench_now() < end || idle < connections) {
        double now = drv_bench_now();
        for (int i = 0; i < connections && now < end; i++) {
            if (slots[i].started > 0 || (rate > 0 && sent >= (long)((now - start) * rate) + 1)) {
                continue;
            }
            if (fixed) {
                slots[i].body = fixed;
                slots[i].size = fixed_size;
            } else {
                free(slots[i].body);
                slots[i].body = drv_bench_otlp_logs_request(sent * records, records, &slots[i].size);
            }
            slots[i].first_seq = sent * records;
            sent++;
            idle--;
            s_start(multi, &slots[i], url, headers);
        }
        curl_multi_perform(multi, &running);
        CURLMsg *message;
        int left;
        while ((message = curl_multi_info_read(multi, &left))) {
            slot_t *slot;
            curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&slot);
            long status = 0, connects = 0;
            curl_easy_getinfo(slot->easy, CURLINFO_RESPONSE_CODE, &status);
            curl_easy_getinfo(slot->easy, CURLINFO_NUM_CONNECTS, &connects);
            bool good = message->data.result == CURLE_OK && status == 200;
            ok += good;
            failed += !good;
            ok_bytes += good ? (long)slot->size : 0;
            if (out) {
                fprintf(out, "%.6f %.3f %ld %ld %ld\n", slot->started, (drv_bench_now() - slot->started) * 1000,
                        message->data.result == CURLE_OK ? status : -1, slot->first_seq, connects);
            }
            curl_multi_remove_handle(multi, slot->easy);
            slot->started = 0;
            idle++;
        }
        curl_multi_poll(multi, NULL, 0, rate > 0 ? 1 : 100, NULL);
    }
    double elapsed = drv_bench_now() - start;
    printf("requests=%ld ok=%ld failed=%ld records=%ld records_per_sec=%.0f ok_bytes=%ld\n", sent, ok, failed,
           ok * records, ok * records / elapsed, ok_bytes);
    for (int i = 0; i < connections; i++) {
        curl_easy_cleanup(slots[i].easy);
        if (!fixed) {
            free(slots[i].body);
        }
    }
    free(fixed);
    free(slots);
    if (out) {
        fclose(out);
    }
    curl_slist_free_all(headers);
    curl_multi_cleanup(multi);
    return 0;
}
