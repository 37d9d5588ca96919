/*  A body as receiver:http meets it. The first byte says how: bit 0 NDJSON
    (else one JSON document), bit 1 gzip'd (inflated first, at most 1 MiB).
    Whatever the bytes, a body is taken whole as records (built as objects)
    that, packed, decode as a batch of exactly the count returned, or is
    refused with a reason (a record nesting deeper than DRV_RECORD_MAX_DEPTH, too). */
#include "fuzz.h"

#include "drv_gzip.h"
#include "drv_http_body.h"

#include "drover/drv_batch.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    bool ndjson = data[0] & 1, gzipped = data[0] & 2;
    char *body = NULL;
    size_t len = 0;
    if (gzipped) {
        if (drv_gzip_inflate(data + 1, size - 1, 1 << 20, &body, &len) != DRV_GZIP_OK) {
            FUZZ_ASSERT(body == NULL);
            return 0;
        }
        FUZZ_ASSERT(len <= 1 << 20 && body[len] == 0);
    } else {
        body = malloc(size);
        memcpy(body, data + 1, size - 1);
        body[size - 1] = 0; // the server's bodies end in a NUL past their size
        len = size - 1;
    }
    msgpack_zone built;
    msgpack_zone_init(&built, 4096);
    json_t *keep = NULL;
    msgpack_object *objects;
    char err[300] = "";
    int n = drv_http_body_records(body, len, ndjson, &built, &keep, &objects, err, sizeof err);
    if (n < 0) {
        FUZZ_ASSERT(err[0] != 0 && keep == NULL);
    } else {
        //  The objects are records: packed as a batch, they decode to as many.
        msgpack_sbuffer out;
        fuzz_pack_records(objects, n, &out);
        json_decref(keep);
        msgpack_zone zone;
        msgpack_zone_init(&zone, 4096);
        msgpack_object root;
        const msgpack_object *records;
        char why[200];
        FUZZ_ASSERT(drv_batch_decode(out.data, out.size, &zone, &root, &records, why, sizeof why) == n);
        msgpack_zone_destroy(&zone);
        msgpack_sbuffer_destroy(&out);
    }
    msgpack_zone_destroy(&built);
    free(body);
    return 0;
}
