/*  drv_file_lines — see the header. */
#include "drv_file_lines.h"
#include "drv_regex.h"

#include "drover/drv_mpcheck.h"
#include "drover/drv_mpjson.h"
#include "drover/drv_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { FORMAT_TEXT, FORMAT_CRI, FORMAT_DOCKER, FORMAT_NDJSON } format_t;

//  A record's worth of lines: one line, or partial lines joined.
typedef struct {
    const char *body;
    size_t len;
    int64_t time_ns; // -1: none
    const char *stream;
    size_t stream_len;
    json_t *doc; // ndjson: the line's object
    int64_t end;
    bool open; // closed while its last piece was partial
} entry_t;

struct drv_file_lines_t {
    format_t format;
    bool kubernetes;
    pcre2_code *start; // multiline.start_pattern, or NULL
    pcre2_match_data *match;
    pcre2_match_context *context;
    size_t max_lines;
    size_t max_bytes; // of a message's body (max_line_bytes; 0: no bound)
    int64_t max_wait_ms;
    const drv_tail_line_t *lines; // those being made into records
    int64_t observed_ns;          // when they were read: their observed_time_unix_nano
    const drv_kube_path_t *kube;  // the pod of their file (kubernetes: true), or NULL
    msgpack_object resource;      // with kube: its attributes, one map the records of the call share
    entry_t entries[DRV_FILE_LINES_MAX];
    json_t *docs; // ndjson and docker documents of the records made
};

static msgpack_object s_str(const char *ptr, size_t len)
{
    msgpack_object o = {.type = MSGPACK_OBJECT_STR};
    o.via.str.ptr = ptr;
    o.via.str.size = (uint32_t)len;
    return o;
}

#define KEY(text) s_str(text, sizeof text - 1)

drv_file_lines_t *drv_file_lines_new(const json_t *config, char *err, size_t errlen)
{
    drv_file_lines_t *self = calloc(1, sizeof *self);
    if (!self || !(self->docs = json_array())) {
        snprintf(err, errlen, "out of memory");
        free(self);
        return NULL;
    }
    const char *format = json_string_value(json_object_get(config, "format"));
    self->format = !format                     ? FORMAT_TEXT
                   : !strcmp(format, "cri")    ? FORMAT_CRI
                   : !strcmp(format, "docker") ? FORMAT_DOCKER
                   : !strcmp(format, "ndjson") ? FORMAT_NDJSON
                                               : FORMAT_TEXT;
    self->kubernetes = json_is_true(json_object_get(config, "kubernetes"));
    self->max_wait_ms = 1000;
    self->max_bytes = (size_t)json_integer_value(json_object_get(config, "max_line_bytes"));
    json_t *multiline = json_object_get(config, "multiline");
    if (!multiline) {
        return self;
    }
    json_t *lines = json_object_get(multiline, "max_lines"), *wait = json_object_get(multiline, "max_wait_ms");
    self->max_lines = lines ? (size_t)json_integer_value(lines) : 1000;
    self->max_wait_ms = wait ? json_integer_value(wait) : 1000;
    int code;
    PCRE2_SIZE offset;
    self->start = pcre2_compile((PCRE2_SPTR)json_string_value(json_object_get(multiline, "start_pattern")),
                                PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &offset, NULL);
    self->match = self->start ? pcre2_match_data_create_from_pattern(self->start, NULL) : NULL;
    self->context = drv_regex_context();
    if (!self->match || !self->context) {
        snprintf(err, errlen, "multiline.start_pattern cannot be compiled");
        drv_file_lines_destroy(&self);
        return NULL;
    }
    pcre2_jit_compile(self->start, PCRE2_JIT_COMPLETE);
    return self;
}

void drv_file_lines_destroy(drv_file_lines_t **self_p)
{
    drv_file_lines_t *self = *self_p;
    if (!self) {
        return;
    }
    pcre2_match_data_free(self->match);
    pcre2_match_context_free(self->context);
    pcre2_code_free(self->start);
    json_decref(self->docs);
    free(self);
    *self_p = NULL;
}

int64_t drv_file_lines_wait_ms(const drv_file_lines_t *self)
{
    return self->max_wait_ms;
}

void drv_file_lines_done(drv_file_lines_t *self)
{
    json_array_clear(self->docs);
}

//  ---------------------------------------------------------------- lines into entries

//  The bytes of segments joined into the batch zone (a partial line's pieces).
static const char *s_join(drv_node_t *node, const entry_t *pieces, size_t n, size_t *len, const char *between)
{
    size_t total = 0, gap = strlen(between);
    for (size_t i = 0; i < n; i++) {
        total += pieces[i].len + (i ? gap : 0);
    }
    char *out = drv_node_alloc(node, total ? total : 1);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (i) {
            memcpy(out + at, between, gap);
            at += gap;
        }
        memcpy(out + at, pieces[i].body, pieces[i].len);
        at += pieces[i].len;
    }
    *len = total;
    return out;
}

//  One line as an entry of the format, and whether a partial line goes on
//  in the next (CRI P, a docker log without its newline).
static bool s_entry(drv_node_t *node, drv_file_lines_t *self, const drv_tail_line_t *line, entry_t *out)
{
    *out = (entry_t){.body = line->data, .len = line->len, .time_ns = -1, .end = line->end};
    if (self->format == FORMAT_CRI) {
        drv_cri_line_t cri;
        if (!drv_cri_parse(line->data, line->len, &cri)) {
            drv_node_record_error(node, "cri: not TIME STREAM P|F MESSAGE: kept whole as its body");
            return false;
        }
        *out = (entry_t){.body = cri.message,
                         .len = cri.message_len,
                         .time_ns = cri.time_ns,
                         .stream = cri.stream,
                         .stream_len = cri.stream_len,
                         .end = line->end};
        return cri.partial;
    }
    if (self->format != FORMAT_DOCKER && self->format != FORMAT_NDJSON) {
        return false;
    }
    json_error_t jerr;
    json_t *doc = json_loadb(line->data, line->len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(doc)) {
        drv_node_record_error(node, self->format == FORMAT_NDJSON ? "ndjson: not a JSON object: kept as its body"
                                                                  : "docker: not a JSON object: kept as its body");
        json_decref(doc);
        return false;
    }
    json_array_append_new(self->docs, doc); // what the entry points into lives until the input is emitted
    if (self->format == FORMAT_NDJSON) {
        out->doc = doc;
        return false;
    }
    json_t *log = json_object_get(doc, "log"), *stream = json_object_get(doc, "stream");
    const char *time = json_string_value(json_object_get(doc, "time"));
    if (!json_is_string(log)) {
        drv_node_record_error(node, "docker: no log string: kept as its body");
        return false;
    }
    out->body = json_string_value(log);
    out->len = json_string_length(log);
    bool whole = out->len > 0 && out->body[out->len - 1] == '\n';
    out->len -= whole;
    out->time_ns = time ? drv_rfc3339_ns(time, strlen(time)) : -1;
    out->stream = json_string_value(stream);
    out->stream_len = out->stream ? json_string_length(stream) : 0;
    return !whole;
}

static bool s_starts(drv_file_lines_t *self, const entry_t *entry);

//  The rest of a message cut, dropped: the pieces of its last line, then
//  (multiline) lines up to one that starts a message. How many lines it
//  took, with made->dropped where they end.
static size_t s_drop_rest(drv_node_t *node, drv_file_lines_t *self, size_t lines, drv_file_lines_made_t *made)
{
    size_t i = 0;
    for (; i < lines && made->where.dropping; i++) {
        entry_t piece;
        bool partial = s_entry(node, self, &self->lines[i], &piece);
        if (!made->where.in_entry && (!self->start || s_starts(self, &piece))) {
            made->where.dropping = false;
            break;
        }
        made->where.in_entry = partial;
        made->dropped = piece.end;
    }
    return i;
}

//  Lines [first, lines) as entries, partial lines joined: how many (the
//  lines after the last are an entry not whole yet). close: one open at
//  the end is closed as it is.
static size_t s_entries(drv_node_t *node, drv_file_lines_t *self, size_t first, size_t lines, bool close)
{
    size_t n = 0;
    entry_t pieces[DRV_FILE_LINES_MAX];
    size_t count = 0;
    for (size_t i = first; i < lines; i++) {
        bool partial = s_entry(node, self, &self->lines[i], &pieces[count]);
        count++;
        if (partial && !(close && i + 1 == lines)) {
            continue;
        }
        entry_t *e = &self->entries[n++];
        *e = pieces[0];
        if (count > 1) {
            e->body = s_join(node, pieces, count, &e->len, "");
        }
        e->end = pieces[count - 1].end;
        e->open = partial;
        count = 0;
    }
    return n;
}

//  ---------------------------------------------------------------- entries into records

static msgpack_object s_map(msgpack_object_kv *kv, size_t n)
{
    msgpack_object map = {.type = MSGPACK_OBJECT_MAP};
    map.via.map.ptr = kv;
    map.via.map.size = (uint32_t)n;
    return map;
}

//  The record's attributes: log.file.path, log.file.name, log.iostream (when
//  known), after those of base (a map, or NULL) other than those.
static msgpack_object s_attributes(drv_node_t *node, const drv_tail_file_t *file, const entry_t *entry,
                                   const msgpack_object *base)
{
    size_t have = base && base->type == MSGPACK_OBJECT_MAP ? base->via.map.size : 0;
    msgpack_object_kv *kv = drv_node_alloc(node, (have + 3) * sizeof *kv);
    size_t n = 0;
    msgpack_object ours[3] = {KEY("log.file.path"), KEY("log.file.name"), KEY("log.iostream")};
    for (size_t i = 0; i < have; i++) {
        const msgpack_object *key = &base->via.map.ptr[i].key;
        bool clash = false;
        for (int k = 0; k < 3; k++) {
            clash |= key->type == MSGPACK_OBJECT_STR && key->via.str.size == ours[k].via.str.size &&
                     !memcmp(key->via.str.ptr, ours[k].via.str.ptr, ours[k].via.str.size);
        }
        if (!clash) {
            kv[n++] = base->via.map.ptr[i];
        }
    }
    kv[n++] = (msgpack_object_kv){ours[0], s_str(file->path, strlen(file->path))};
    kv[n++] = (msgpack_object_kv){ours[1], s_str(file->name, strlen(file->name))};
    if (entry->stream_len) {
        kv[n++] = (msgpack_object_kv){ours[2], s_str(entry->stream, entry->stream_len)};
    }
    return s_map(kv, n);
}

static msgpack_object s_resource(drv_node_t *node, const drv_kube_path_t *k)
{
    msgpack_object_kv *kv = drv_node_alloc(node, 5 * sizeof *kv);
    kv[0] = (msgpack_object_kv){KEY("k8s.namespace.name"), s_str(k->namespace_, strlen(k->namespace_))};
    kv[1] = (msgpack_object_kv){KEY("k8s.pod.name"), s_str(k->pod, strlen(k->pod))};
    kv[2] = (msgpack_object_kv){KEY("k8s.pod.uid"), s_str(k->uid, strlen(k->uid))};
    kv[3] = (msgpack_object_kv){KEY("k8s.container.name"), s_str(k->container, strlen(k->container))};
    kv[4].key = KEY("k8s.container.restart_count");
    kv[4].val = (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = (uint64_t)k->restart_count};
    return s_map(kv, 5);
}

//  entries[0..n) (one message: a line, or lines joined by multiline) as a
//  record: true when its body was cut at max_line_bytes.
static bool s_record(drv_node_t *node, drv_file_lines_t *self, const drv_tail_file_t *file, const entry_t *entries,
                     size_t n, msgpack_object *out)
{
    const entry_t *first = &entries[0];
    bool cut = false;
    msgpack_object parsed = {.type = MSGPACK_OBJECT_NIL};
    if (first->doc && drv_mpjson_object(first->doc, drv_node_zone(node), DRV_RECORD_MAX_DEPTH - 1, &parsed) != 0) {
        drv_node_record_error(node, "ndjson: nested too deep: kept as its body");
        parsed.type = MSGPACK_OBJECT_NIL;
    }
    size_t have = parsed.type == MSGPACK_OBJECT_MAP ? parsed.via.map.size : 0;
    msgpack_object_kv *kv = drv_node_alloc(node, (have + 5) * sizeof *kv);
    size_t count = 0;
    const msgpack_object *attributes = NULL;
    bool observed = false; // an ndjson line's own observed_time_unix_nano is kept
    for (size_t i = 0; i < have; i++) {
        const msgpack_object *key = &parsed.via.map.ptr[i].key;
        observed |= key->type == MSGPACK_OBJECT_STR && key->via.str.size == 23 &&
                    !memcmp(key->via.str.ptr, "observed_time_unix_nano", 23);
        if (key->type == MSGPACK_OBJECT_STR && key->via.str.size == 10 && !memcmp(key->via.str.ptr, "attributes", 10)) {
            attributes = &parsed.via.map.ptr[i].val;
        } else if (!(self->kube && key->type == MSGPACK_OBJECT_STR && key->via.str.size == 8 &&
                     !memcmp(key->via.str.ptr, "resource", 8))) {
            kv[count++] = parsed.via.map.ptr[i];
        }
    }
    if (parsed.type != MSGPACK_OBJECT_MAP) {
        size_t len = first->len;
        const char *body = n > 1 ? s_join(node, entries, n, &len, "\n") : first->body;
        cut = self->max_bytes && len > self->max_bytes;
        kv[count++] = (msgpack_object_kv){KEY("body"), s_str(body, cut ? self->max_bytes : len)};
    }
    kv[count++] = (msgpack_object_kv){KEY("attributes"), s_attributes(node, file, first, attributes)};
    if (first->time_ns >= 0) {
        kv[count].key = KEY("time_unix_nano");
        kv[count++].val =
            (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = (uint64_t)first->time_ns};
    }
    if (!observed) {
        kv[count].key = KEY("observed_time_unix_nano"); // when drover read it
        kv[count++].val =
            (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = (uint64_t)self->observed_ns};
    }
    if (self->kube) {
        kv[count++] = (msgpack_object_kv){KEY("resource"), self->resource};
    }
    *out = s_map(kv, count);
    return cut;
}

static bool s_starts(drv_file_lines_t *self, const entry_t *entry)
{
    return pcre2_match(self->start, (PCRE2_SPTR)entry->body, entry->len, 0, 0, self->match, self->context) >= 0;
}

//  The n entries as records, messages joined by multiline (a message
//  still open is left unless close says otherwise).
static void s_records(drv_node_t *node, drv_file_lines_t *self, const drv_tail_file_t *file, size_t n,
                      drv_file_lines_close_t close, msgpack_object *records, drv_file_lines_made_t *made)
{
    bool multiline = self->start && self->format != FORMAT_NDJSON;
    size_t from = 0;
    for (size_t i = 1; i <= n; i++) {
        bool closes = !multiline || (i == n ? close != DRV_FILE_LINES_OPEN
                                            : s_starts(self, &self->entries[i]) || i - from >= self->max_lines);
        if (!closes) {
            continue;
        }
        const entry_t *last = &self->entries[i - 1];
        bool cut = s_record(node, self, file, &self->entries[from], i - from, &records[made->records++]);
        if (i == n && close == DRV_FILE_LINES_CUT && (multiline || last->open)) {
            made->where = (drv_file_lines_file_t){.dropping = true, .in_entry = last->open};
            cut = true;
        }
        made->cut += cut;
        made->end = last->end;
        from = i;
    }
}

drv_file_lines_made_t drv_file_lines_records(drv_file_lines_t *self, drv_node_t *node, const drv_tail_file_t *file,
                                             const drv_file_lines_file_t *where, const drv_kube_path_t *kube,
                                             const drv_tail_line_t *lines, size_t n, drv_file_lines_close_t close,
                                             msgpack_object *records)
{
    drv_file_lines_made_t made = {.end = -1, .dropped = -1, .where = *where};
    self->lines = lines;
    self->kube = self->kubernetes ? kube : NULL;
    if (self->kube) {
        self->resource = s_resource(node, self->kube); // never changed in place: shared
    }
    self->observed_ns = drv_time_wall_ns();
    n = n > DRV_FILE_LINES_MAX ? DRV_FILE_LINES_MAX : n;
    size_t first = s_drop_rest(node, self, n, &made);
    size_t entries = s_entries(node, self, first, n, close != DRV_FILE_LINES_OPEN);
    s_records(node, self, file, entries, close, records, &made);
    return made;
}
