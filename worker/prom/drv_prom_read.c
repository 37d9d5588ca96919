/*  drv_prom_read — a WriteRequest as metric records (drv_prom.h): decoded
    by drv_pbunpack into the records' zone (the records point at its
    strings), then each sample a record as
    receiver:otlp makes them: a series whose name ends with _total a
    cumulative monotonic sum, the rest gauges, its labels but __name__ as
    attributes (a name given twice: the first; an empty one: none), its
    timestamp (ms) as time_unix_nano. A series of more than
    DRV_PROM_LABELS_MAX labels, or a label name or value longer than
    DRV_PROM_LABEL_BYTES_MAX, refuses the request. */
#include "drv_pbunpack.h"
#include "drv_prom.h"

#include "prometheus/remote.pb-c.h"

#include <stdio.h>
#include <string.h>

#define STR(s) ((msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)strlen(s), (s)}})
#define RECORD_KEYS 8

//  A string of the decoded request: it lives in the zone the records do.
static msgpack_object s_text(const char *text)
{
    return text ? STR(text) : STR("");
}

//  The records of one series, one per sample, into out; false when out of memory.
static bool s_series(msgpack_zone *zone, const Prometheus__TimeSeries *ts, msgpack_object *out)
{
    const char *name = NULL;
    for (size_t i = 0; i < ts->n_labels; i++) {
        if (ts->labels[i]->name && !strcmp(ts->labels[i]->name, "__name__")) {
            name = ts->labels[i]->value;
        }
    }
    msgpack_object_kv *attrs = msgpack_zone_malloc(zone, (ts->n_labels ? ts->n_labels : 1) * sizeof *attrs);
    if (!attrs) {
        return false;
    }
    uint32_t nattrs = 0;
    for (size_t i = 0; i < ts->n_labels; i++) {
        const char *label = ts->labels[i]->name;
        bool again = false; // a name twice (the specification forbids it; a sender may not care): the first stands
        for (size_t k = 0; k < i && !again; k++) {
            again = ts->labels[k]->name && label && !strcmp(ts->labels[k]->name, label);
        }
        if (label && label[0] && !again && strcmp(label, "__name__")) {
            attrs[nattrs].key = s_text(ts->labels[i]->name);
            attrs[nattrs++].val = s_text(ts->labels[i]->value);
        }
    }
    msgpack_object attributes = {.type = MSGPACK_OBJECT_MAP, .via.map = {.size = nattrs, .ptr = attrs}};
    msgpack_object metric = s_text(name);
    size_t len = name ? strlen(name) : 0;
    bool counter = len > 6 && !strcmp(name + len - 6, "_total");
    for (size_t s = 0; s < ts->n_samples; s++) {
        msgpack_object_kv *kv = msgpack_zone_malloc(zone, RECORD_KEYS * sizeof *kv);
        if (!kv) {
            return false;
        }
        uint32_t n = 0;
        kv[n++] = (msgpack_object_kv){STR("signal"), STR("metric")};
        kv[n++] = (msgpack_object_kv){STR("name"), metric};
        kv[n++] = (msgpack_object_kv){STR("type"), counter ? STR("sum") : STR("gauge")};
        if (counter) {
            kv[n++] = (msgpack_object_kv){STR("aggregation_temporality"),
                                          {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 2}};
            kv[n++] = (msgpack_object_kv){STR("is_monotonic"), {.type = MSGPACK_OBJECT_BOOLEAN, .via.boolean = true}};
        }
        int64_t ms = ts->samples[s]->timestamp;
        kv[n++] = (msgpack_object_kv){STR("time_unix_nano"),
                                      {.type = MSGPACK_OBJECT_POSITIVE_INTEGER,
                                       .via.u64 = ms > 0 && ms < INT64_MAX / 1000000 ? (uint64_t)ms * 1000000u : 0}};
        kv[n++] = (msgpack_object_kv){STR("attributes"), attributes};
        kv[n++] = (msgpack_object_kv){STR("value"), {.type = MSGPACK_OBJECT_FLOAT64, .via.f64 = ts->samples[s]->value}};
        out[s] = (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {.size = n, .ptr = kv}};
    }
    return true;
}

int drv_prom_decode(const void *data, size_t size, msgpack_zone *zone, size_t max_samples, msgpack_object **records,
                    char *err, size_t errlen)
{
    char why[300];
    *records = NULL;
    ProtobufCMessage *message;
    int unpacked = drv_pbunpack(&prometheus__write_request__descriptor, data, size, zone, &message, why, sizeof why);
    if (unpacked != 0) {
        snprintf(err, errlen, "%s%s",
                 unpacked == DRV_PBUNPACK_NO_MEMORY ? "" : "not a remote-write WriteRequest: ", why);
        return -1;
    }
    const Prometheus__WriteRequest *write = (const Prometheus__WriteRequest *)message;
    size_t samples = 0, labels = 0, longest = 0;
    for (size_t i = 0; i < write->n_timeseries; i++) {
        const Prometheus__TimeSeries *ts = write->timeseries[i];
        samples += ts->n_samples;
        labels = ts->n_labels > labels ? ts->n_labels : labels;
        for (size_t k = 0; k < ts->n_labels && k <= DRV_PROM_LABELS_MAX; k++) {
            size_t name = ts->labels[k]->name ? strlen(ts->labels[k]->name) : 0;
            size_t value = ts->labels[k]->value ? strlen(ts->labels[k]->value) : 0;
            longest = name > longest ? name : value > longest ? value : longest;
        }
    }
    int rc = 0;
    if (longest > DRV_PROM_LABEL_BYTES_MAX) {
        snprintf(err, errlen, "a label name or value of %zu bytes: at most %d", longest, DRV_PROM_LABEL_BYTES_MAX);
        rc = -1;
    } else if (labels > DRV_PROM_LABELS_MAX) {
        snprintf(err, errlen, "a series with %zu labels: at most %d", labels, DRV_PROM_LABELS_MAX);
        rc = -1;
    } else if (samples > max_samples) {
        snprintf(err, errlen, "%zu samples in one request: at most %zu (lower the sender's max_samples_per_send)",
                 samples, max_samples);
        rc = DRV_PROM_TOO_MANY;
    }
    msgpack_object *out = rc == 0 ? msgpack_zone_malloc(zone, (samples ? samples : 1) * sizeof *out) : NULL;
    size_t n = 0;
    for (size_t i = 0; out && i < write->n_timeseries; i++) {
        if (!s_series(zone, write->timeseries[i], out + n)) {
            out = NULL;
            break;
        }
        n += write->timeseries[i]->n_samples;
    }
    if (rc == 0 && !out) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *records = out;
    return rc == 0 ? (int)n : rc;
}
