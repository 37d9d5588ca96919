/*  What receiver:journald makes of an entry's fields (worker/nodes/
    drv_journal_entry.c): any local user writes them through journald's
    native protocol, repeated names included, and a journal directory may
    hold any bytes. The input is the fields, one per line. Whatever they
    are: no crash, the record is a map that decodes as a producer's record
    would (no key twice, at any depth), and what it carries stays within
    the entry's byte bound. */
#include "fuzz.h"

#include "drv_journal_entry.h"

#include "drover/drv_batch.h"

#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static drv_journal_field_t fields[MAX_FIELDS];
    size_t n = 0;
    for (size_t at = 0; at < size && n < MAX_FIELDS;) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t len = nl ? (size_t)(nl - (data + at)) : size - at;
        fields[n++] = (drv_journal_field_t){data + at, len};
        at += len + 1;
    }
    msgpack_zone zone;
    msgpack_zone_init(&zone, 4096);
    msgpack_object record;
    drv_journal_made_t made;
    FUZZ_ASSERT(
        drv_journal_entry_record(fields, n, 1795687200000000ull, 1795687200000000001ull, &zone, &record, &made) == 0);
    FUZZ_ASSERT(made.bytes <= DRV_JOURNAL_ENTRY_MAX_BYTES && made.skipped + made.left_out <= n);
    msgpack_sbuffer out;
    fuzz_pack_records(&record, 1, &out);
    msgpack_zone decoded;
    msgpack_zone_init(&decoded, 4096);
    msgpack_object root;
    const msgpack_object *records;
    char why[200] = "";
    FUZZ_ASSERT(drv_batch_decode(out.data, out.size, &decoded, &root, &records, why, sizeof why) == 1);
    msgpack_zone_destroy(&decoded);
    msgpack_sbuffer_destroy(&out);
    msgpack_zone_destroy(&zone);
    return 0;
}
