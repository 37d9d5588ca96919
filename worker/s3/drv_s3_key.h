/*  drv_s3_key — the key of each object exporter:s3 writes (docs/s3.md,
    "Keys"): a template whose {signal}, {instance}, {seq} and {ext} are
    filled in and whose strftime conversions (%Y, %m, %d, %H, ...) take
    the object's time in UTC; and the sequence that makes two objects of
    one instance never share a key. The sequence lives in a file the
    instance holds with flock(2) while it takes a number, so a restart goes
    on from where it was and two generations of one core running side by
    side during a replace never take the same one. A file that is not
    there (the first object, or a run_dir lost at a reboot) starts at the
    time in microseconds, past any number an earlier run could have taken
    at a second per object. */
#ifndef DRV_S3_KEY_H
#define DRV_S3_KEY_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct {
    const char *signal;   // logs, traces, metrics, records
    const char *instance; // GROUP.PIPELINE.CORE
    uint64_t seq;
    const char *ext; // ndjson.gz, json.zst, binpb, ...
    time_t when;     // the object's time (UTC)
} drv_s3_key_fields_t;

//  The key of fields by template (checked by exporter:s3's schema: its
//  braces name only the four fields, its % conversions are strftime's), into out: 0, or -1 when it does not fit
//  (or is empty).
int drv_s3_key_make(const char *template, const drv_s3_key_fields_t *fields, char *out, size_t outlen);
//  The next number of the sequence kept in path: 0 with it in *seq, or -1
//  with the reason in err (the file cannot be made, locked or written).
int drv_s3_key_next_seq(const char *path, uint64_t *seq, char *err, size_t errlen);

#endif
