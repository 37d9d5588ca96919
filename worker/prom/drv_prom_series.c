/*  drv_prom_series — see drv_prom_series.h. */
#include "drv_prom_series.h"

#include "prometheus/remote.pb-c.h"

#include <snappy-c.h>
#include <stdlib.h>

#define ZONE_CHUNK (64 * 1024)

struct series_t {
    Prometheus__TimeSeries ts;
    size_t label_cap, sample_cap;
    const char *key; // its labels as text, name\1value\2 in name order
    size_t keylen;
    uint64_t hash;
};

void *drv_prom_series_alloc(drv_prom_series_t *self, size_t size)
{
    void *block = self->failed ? NULL : msgpack_zone_malloc(self->zone, size ? size : 1);
    self->failed = !block;
    return block;
}

//  The table's hash of a series' key: eight bytes a step, mixed as
//  splitmix64 finishes.
uint64_t drv_prom_hash(const char *key, size_t len)
{
    uint64_t hash = 0x9e3779b97f4a7c15u ^ len;
    for (; len >= 8; key += 8, len -= 8) {
        uint64_t word;
        memcpy(&word, key, 8);
        hash = (hash ^ word) * 0xbf58476d1ce4e5b9u;
        hash ^= hash >> 31;
    }
    uint64_t tail = 0;
    memcpy(&tail, key, len);
    hash = (hash ^ tail) * 0x94d049bb133111ebu;
    return hash ^ (hash >> 29);
}

//  The slot of key in the table: its series, or the empty slot it would take.
static series_t **s_slot(const drv_prom_series_t *self, const char *key, size_t len, uint64_t hash)
{
    size_t mask = self->table_size - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        series_t *s = self->table[i];
        if (!s || (s->hash == hash && s->keylen == len && !memcmp(s->key, key, len))) {
            return &self->table[i];
        }
    }
}

//  Room for one more series: the table at most half full, the list grown.
static bool s_room(drv_prom_series_t *self)
{
    if ((self->series_count + 1) * 2 > self->table_size) {
        size_t size = self->table_size ? self->table_size * 2 : 1024;
        series_t **table = drv_prom_series_alloc(self, size * sizeof *table);
        if (!table) {
            return false;
        }
        memset(table, 0, size * sizeof *table);
        series_t **old = self->table;
        size_t old_size = self->table_size;
        self->table = table;
        self->table_size = size;
        for (size_t i = 0; i < old_size; i++) {
            if (old[i]) {
                *s_slot(self, old[i]->key, old[i]->keylen, old[i]->hash) = old[i];
            }
        }
    }
    if (self->series_count == self->series_cap) {
        size_t cap = self->series_cap ? self->series_cap * 2 : 256;
        series_t **grown = drv_prom_series_alloc(self, cap * sizeof *grown);
        if (!grown) {
            return false;
        }
        if (self->series_count) {
            memcpy(grown, self->series, self->series_count * sizeof *grown);
        }
        self->series = grown;
        self->series_cap = cap;
    }
    return true;
}

char *drv_prom_series_text(drv_prom_series_t *self, const char *text, size_t len)
{
    char *copy = drv_prom_series_alloc(self, len + 1);
    if (copy) {
        memcpy(copy, text, len);
        copy[len] = 0;
    }
    return copy;
}

static int s_names_cmp(const drv_prom_label_t *x, const drv_prom_label_t *y)
{
    int c = memcmp(x->name, y->name, x->nlen < y->nlen ? x->nlen : y->nlen);
    return c ? c : (x->nlen > y->nlen) - (x->nlen < y->nlen);
}

static int s_label_cmp(const void *a, const void *b)
{
    return s_names_cmp(a, b);
}

static int s_sample_cmp(const void *a, const void *b)
{
    int64_t x = (*(Prometheus__Sample *const *)a)->timestamp, y = (*(Prometheus__Sample *const *)b)->timestamp;
    return x < y ? -1 : x > y;
}

static bool s_sorted(const drv_prom_label_t *labels, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        if (s_names_cmp(&labels[i - 1], &labels[i]) > 0) {
            return false;
        }
    }
    return true;
}

//  The labels (sorted by name) as a series' key in self->key: name\1value\2
//  for each with a name and a value.
static bool s_key(drv_prom_series_t *self, const drv_prom_label_t *labels, size_t n)
{
    self->key.len = 0;
    for (size_t i = 0; i < n; i++) {
        if (!labels[i].value || !labels[i].vlen) {
            continue;
        }
        size_t name = labels[i].nlen, value = labels[i].vlen;
        if (drv_buf_reserve(&self->key, name + value + 2) != 0) {
            self->failed = true;
            return false;
        }
        char *at = self->key.data + self->key.len;
        memcpy(at, labels[i].name, name);
        at[name] = '\x01';
        memcpy(at + name + 1, labels[i].value, value);
        at[name + 1 + value] = '\x02';
        self->key.len += name + value + 2;
    }
    return true;
}

//  A new series of the kept labels under self->key, into its slot.
static series_t *s_series_new(drv_prom_series_t *self, series_t **slot, const drv_prom_label_t *labels, size_t kept,
                              uint64_t hash)
{
    series_t *s = drv_prom_series_alloc(self, sizeof *s);
    Prometheus__Label **list = drv_prom_series_alloc(self, (kept ? kept : 1) * sizeof *list);
    Prometheus__Label *each = drv_prom_series_alloc(self, (kept ? kept : 1) * sizeof *each);
    char *key = drv_prom_series_alloc(self, self->key.len ? self->key.len : 1);
    if (!s || !list || !each || !key) {
        return NULL;
    }
    //  The labels' text may be the caller's: the series keeps copies.
    prometheus__time_series__init(&s->ts);
    for (size_t i = 0; i < kept; i++) {
        prometheus__label__init(&each[i]);
        each[i].name = drv_prom_series_text(self, labels[i].name, labels[i].nlen);
        each[i].value = drv_prom_series_text(self, labels[i].value, labels[i].vlen);
        list[i] = &each[i];
    }
    s->ts.labels = list;
    s->ts.n_labels = kept;
    s->label_cap = kept;
    s->sample_cap = 0;
    memcpy(key, self->key.data, self->key.len);
    s->key = key;
    s->keylen = self->key.len;
    s->hash = hash;
    self->series[self->series_count++] = s;
    *slot = s;
    return s;
}

//  The labels sorted by name, those without a name or a value left out, of
//  a name twice one: how many stand.
size_t drv_prom_labels_normalize(drv_prom_label_t *labels, size_t n)
{
    if (!s_sorted(labels, n)) {
        qsort(labels, n, sizeof *labels, s_label_cmp);
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (!labels[i].nlen || !labels[i].value || !labels[i].vlen ||
            (kept && !s_names_cmp(&labels[kept - 1], &labels[i]))) {
            continue;
        }
        labels[kept++] = labels[i];
    }
    return kept;
}

//  The sample value at ms with labels (name first, n of them): into its series.
void drv_prom_series_add(drv_prom_series_t *self, drv_prom_label_t *labels, size_t n, double value, int64_t ms)
{
    size_t kept = drv_prom_labels_normalize(labels, n);
    if (!s_key(self, labels, kept) || !s_room(self)) {
        return;
    }
    uint64_t hash = drv_prom_hash(self->key.data, self->key.len);
    series_t **slot = s_slot(self, self->key.data, self->key.len, hash);
    series_t *s = *slot ? *slot : s_series_new(self, slot, labels, kept, hash);
    if (!s) {
        return;
    }
    if (s->ts.n_samples == s->sample_cap) {
        size_t cap = s->sample_cap ? s->sample_cap * 2 : 4;
        Prometheus__Sample **grown = drv_prom_series_alloc(self, cap * sizeof *grown);
        Prometheus__Sample *each = drv_prom_series_alloc(self, (cap - s->sample_cap) * sizeof *each);
        if (!grown || !each) {
            return;
        }
        if (s->ts.n_samples) {
            memcpy(grown, s->ts.samples, s->ts.n_samples * sizeof *grown);
        }
        for (size_t i = s->sample_cap; i < cap; i++) {
            grown[i] = &each[i - s->sample_cap];
        }
        s->ts.samples = grown;
        s->sample_cap = cap;
    }
    Prometheus__Sample *sample = s->ts.samples[s->ts.n_samples++];
    prometheus__sample__init(sample);
    sample->value = value;
    sample->timestamp = ms;
}

bool drv_prom_series_holds(drv_prom_series_t *self, const drv_prom_label_t *labels, size_t n)
{
    if (!self->table || !s_key(self, labels, n)) {
        return false;
    }
    return *s_slot(self, self->key.data, self->key.len, drv_prom_hash(self->key.data, self->key.len)) != NULL;
}

int drv_prom_series_init(drv_prom_series_t *self)
{
    *self = (drv_prom_series_t){.zone = msgpack_zone_new(ZONE_CHUNK)};
    self->failed = !self->zone;
    return self->zone ? 0 : -1;
}

void drv_prom_series_free(drv_prom_series_t *self)
{
    if (self->zone) {
        msgpack_zone_free(self->zone);
    }
    drv_buf_free(&self->key);
    *self = (drv_prom_series_t){0};
}

int drv_prom_series_pack(drv_prom_series_t *self, drv_buf_t *body)
{
    Prometheus__WriteRequest request = PROMETHEUS__WRITE_REQUEST__INIT;
    Prometheus__TimeSeries **list =
        self->failed ? NULL : drv_prom_series_alloc(self, (self->series_count + 1) * sizeof *list);
    for (size_t i = 0; list && i < self->series_count; i++) {
        Prometheus__TimeSeries *ts = &self->series[i]->ts;
        qsort(ts->samples, ts->n_samples, sizeof *ts->samples, s_sample_cmp); // a series' samples in time order
        list[i] = ts;
    }
    int rc = -1;
    if (list) {
        request.timeseries = list;
        request.n_timeseries = self->series_count;
        size_t size = prometheus__write_request__get_packed_size(&request);
        uint8_t *packed = malloc(size ? size : 1);
        size_t room = snappy_max_compressed_length(size);
        if (packed && drv_buf_reserve(body, room) == 0) {
            prometheus__write_request__pack(&request, packed);
            size_t written = room;
            rc = snappy_compress((const char *)packed, size, body->data + body->len, &written) == SNAPPY_OK ? 0 : -1;
            body->len += rc == 0 ? written : 0;
        }
        free(packed);
    }
    return rc;
}
