/*  A remote-write body as receiver:prometheus_remote_write meets it once
    decompressed: whatever the bytes, it is refused with a reason or becomes
    one record per sample that, packed, decodes through drv_batch as a batch
    of exactly that count; what protobuf-c allocates for an accepted request
    is never more than drv_pbcheck estimated. Those records then go back out
    as exporter:prometheus_remote_write writes them: the snappy body
    decompresses to a WriteRequest that decodes again, with a sample for
    every record that named its series (target_info adds none: the records
    have no resource). */
#include "fuzz.h"
#include "fuzz_pbcheck.h"

#include "drv_buf.h"
#include "drv_prom.h"

#include "drover/drv_batch.h"
#include "prometheus/remote.pb-c.h"

#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    msgpack_zone zone;
    msgpack_zone_init(&zone, 4096);
    msgpack_object *records;
    char err[300] = "";
    int n = drv_prom_decode(data, size, &zone, 100000, &records, err, sizeof err);
    if (n < 0) {
        FUZZ_ASSERT(err[0]);
        msgpack_zone_destroy(&zone);
        return 0;
    }
    fuzz_check_estimate(&prometheus__write_request__descriptor, data, size);
    size_t named = 0;
    for (int i = 0; i < n; i++) {
        const msgpack_object *name = &records[i].via.map.ptr[1].val; // {signal, name, ...}
        named += name->type == MSGPACK_OBJECT_STR && name->via.str.size > 0;
    }
    if (n > 0) {
        msgpack_sbuffer out;
        fuzz_pack_records(records, n, &out);
        msgpack_zone again;
        msgpack_zone_init(&again, 4096);
        msgpack_object root;
        const msgpack_object *decoded;
        char why[300];
        FUZZ_ASSERT(drv_batch_decode(out.data, out.size, &again, &root, &decoded, why, sizeof why) == n);
        msgpack_zone_destroy(&again);
        msgpack_sbuffer_destroy(&out);
    }
    //  Out again as remote write, and back.
    drv_buf_t body = {0};
    size_t kept = 0;
    msgpack_object *named_records = malloc((size_t)(n > 0 ? n : 1) * sizeof *named_records);
    for (int i = 0; i < n; i++) { // as the exporter's run keeps them
        if (!drv_prom_refusal(&records[i])) {
            named_records[kept++] = records[i];
        }
    }
    FUZZ_ASSERT(kept == named);
    FUZZ_ASSERT(drv_prom_encode(named_records, kept, &body, err, sizeof err) == 0);
    free(named_records);
    size_t length = 0;
    FUZZ_ASSERT(snappy_uncompressed_length(body.data, body.len, &length) == SNAPPY_OK);
    char *plain = malloc(length ? length : 1);
    FUZZ_ASSERT(plain && snappy_uncompress(body.data, body.len, plain, &length) == SNAPPY_OK);
    Prometheus__WriteRequest *write = prometheus__write_request__unpack(NULL, length, (const uint8_t *)plain);
    FUZZ_ASSERT(write);
    size_t samples = 0;
    for (size_t i = 0; i < write->n_timeseries; i++) {
        samples += write->timeseries[i]->n_samples;
        for (size_t l = 1; l < write->timeseries[i]->n_labels; l++) { // sorted, each name once
            FUZZ_ASSERT(strcmp(write->timeseries[i]->labels[l - 1]->name, write->timeseries[i]->labels[l]->name) < 0);
        }
    }
    FUZZ_ASSERT(samples == named); // a sample for every named record, none for the others
    prometheus__write_request__free_unpacked(write, NULL);
    free(plain);
    drv_buf_free(&body);
    msgpack_zone_destroy(&zone);
    return 0;
}
