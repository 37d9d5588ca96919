/*  drv_journal_entry — a journal entry's fields as a record
    (docs/operations.md, "Reading the journal"): body from MESSAGE,
    severity from PRIORITY, the other fields attributes of the same name. A
    field may appear more than once in an entry (journald's native protocol
    lets any local user log MESSAGE=a MESSAGE=b): its values then become an
    array, in order, as `journalctl -o json` writes them. What an entry
    carries is bounded (docs/security.md): fields past
    DRV_JOURNAL_ENTRY_MAX_BYTES of values are left out, and counted. */
#ifndef DRV_JOURNAL_ENTRY_H
#define DRV_JOURNAL_ENTRY_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

#define DRV_JOURNAL_ENTRY_MAX_BYTES (4 * 1024 * 1024)

//  One field as sd_journal_enumerate_data gives it: NAME=value.
typedef struct {
    const void *data;
    size_t len;
} drv_journal_field_t;

//  What became of an entry's fields.
typedef struct {
    size_t skipped;  // not NAME=value, or not UTF-8 (binary fields are not carried)
    size_t left_out; // past the entry's byte bound
    size_t bytes;    // of the values carried
} drv_journal_made_t;

//  fields[0..n) as a record in zone (strings copied there), with
//  time_unix_nano from realtime_us (UINT64_MAX: none) and
//  observed_time_unix_nano observed_ns (when it was read). 0, or -1 when
//  out of memory.
int drv_journal_entry_record(const drv_journal_field_t *fields, size_t n, uint64_t realtime_us, uint64_t observed_ns,
                             msgpack_zone *zone, msgpack_object *out, drv_journal_made_t *made);

#endif
