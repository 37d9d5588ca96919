/*  drv_journal_entry — see the header. */
#include "drv_journal_entry.h"

#include "drv_otlp.h"

#include "drover/drv_utf8.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

//  A field carried: where its name and value are, and its place in the entry.
typedef struct {
    const char *name, *value;
    uint32_t name_len, value_len;
    size_t order;
} field_t;

//  By name, then by order: a repeated field's values stay in order.
static int s_by_name(const void *pa, const void *pb)
{
    const field_t *a = pa, *b = pb;
    if (a->name_len != b->name_len) {
        return a->name_len < b->name_len ? -1 : 1;
    }
    int c = memcmp(a->name, b->name, a->name_len);
    return c ? c : a->order < b->order ? -1 : 1;
}

static bool s_same_name(const field_t *a, const field_t *b)
{
    return a->name_len == b->name_len && !memcmp(a->name, b->name, a->name_len);
}

static bool s_named(const field_t *f, const char *name)
{
    return f->name_len == strlen(name) && !memcmp(f->name, name, f->name_len);
}

static msgpack_object s_str(msgpack_zone *zone, const char *text, size_t len, bool *ok)
{
    msgpack_object o = {.type = MSGPACK_OBJECT_STR};
    char *copy = msgpack_zone_malloc(zone, len ? len : 1);
    *ok &= copy != NULL;
    if (copy) {
        memcpy(copy, text, len);
    }
    o.via.str.ptr = copy;
    o.via.str.size = (uint32_t)len;
    return o;
}

static msgpack_object s_key(const char *text)
{
    msgpack_object o = {.type = MSGPACK_OBJECT_STR};
    o.via.str.ptr = text;
    o.via.str.size = (uint32_t)strlen(text);
    return o;
}

//  A group of fields of one name: its value, or the array of its values.
static msgpack_object s_values(msgpack_zone *zone, const field_t *group, size_t n, bool *ok)
{
    if (n == 1) {
        return s_str(zone, group[0].value, group[0].value_len, ok);
    }
    msgpack_object array = {.type = MSGPACK_OBJECT_ARRAY};
    array.via.array.ptr = msgpack_zone_malloc(zone, n * sizeof *array.via.array.ptr);
    array.via.array.size = array.via.array.ptr ? (uint32_t)n : 0;
    *ok &= array.via.array.ptr != NULL;
    for (size_t i = 0; i < array.via.array.size; i++) {
        array.via.array.ptr[i] = s_str(zone, group[i].value, group[i].value_len, ok);
    }
    return array;
}

int drv_journal_entry_record(const drv_journal_field_t *fields, size_t n, uint64_t realtime_us, uint64_t observed_ns,
                             msgpack_zone *zone, msgpack_object *out, drv_journal_made_t *made)
{
    *made = (drv_journal_made_t){0};
    field_t *kept = n ? malloc(n * sizeof *kept) : NULL;
    if (n && !kept) {
        return -1;
    }
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        const char *text = fields[i].data, *eq = fields[i].len ? memchr(text, '=', fields[i].len) : NULL;
        size_t name_len = eq ? (size_t)(eq - text) : 0, value_len = eq ? fields[i].len - name_len - 1 : 0;
        if (!eq || name_len == 0 || value_len > UINT32_MAX || !drv_utf8_valid(text, name_len, false) ||
            !drv_utf8_valid(eq + 1, value_len, false)) {
            made->skipped++;
            continue;
        }
        if (made->bytes + value_len > DRV_JOURNAL_ENTRY_MAX_BYTES) {
            made->left_out++;
            continue;
        }
        made->bytes += value_len;
        kept[count++] = (field_t){text, eq + 1, (uint32_t)name_len, (uint32_t)value_len, i};
    }
    if (count > 1) {
        qsort(kept, count, sizeof *kept, s_by_name);
    }
    //  At most body, severity_number, severity_text, time_unix_nano,
    //  observed_time_unix_nano, attributes.
    msgpack_object_kv *kv = msgpack_zone_malloc(zone, 6 * sizeof *kv);
    msgpack_object_kv *attrs = msgpack_zone_malloc(zone, (count ? count : 1) * sizeof *attrs);
    bool ok = kv && attrs;
    size_t top = 0, named = 0;
    for (size_t at = 0, next; ok && at < count; at = next) {
        for (next = at + 1; next < count && s_same_name(&kept[at], &kept[next]); next++) {
        }
        const field_t *f = &kept[at];
        if (s_named(f, "MESSAGE")) {
            kv[top++] = (msgpack_object_kv){s_key("body"), s_values(zone, f, next - at, &ok)};
        } else if (s_named(f, "PRIORITY") && f->value_len == 1 && f->value[0] >= '0' && f->value[0] <= '7') {
            const char *name;
            kv[top].key = s_key("severity_number");
            kv[top++].val =
                (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER,
                                 .via.u64 = (uint64_t)drv_otlp_syslog_severity((unsigned)(f->value[0] - '0'), &name)};
            kv[top++] = (msgpack_object_kv){s_key("severity_text"), s_key(name)};
        } else {
            attrs[named++] =
                (msgpack_object_kv){s_str(zone, f->name, f->name_len, &ok), s_values(zone, f, next - at, &ok)};
        }
    }
    free(kept);
    if (!ok) {
        return -1;
    }
    if (realtime_us != UINT64_MAX) {
        kv[top].key = s_key("time_unix_nano");
        kv[top++].val = (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = realtime_us * 1000};
    }
    kv[top].key = s_key("observed_time_unix_nano");
    kv[top++].val = (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = observed_ns};
    kv[top].key = s_key("attributes");
    kv[top].val = (msgpack_object){.type = MSGPACK_OBJECT_MAP};
    kv[top].val.via.map.ptr = attrs;
    kv[top++].val.via.map.size = (uint32_t)named;
    *out = (msgpack_object){.type = MSGPACK_OBJECT_MAP};
    out->via.map.ptr = kv;
    out->via.map.size = (uint32_t)top;
    return 0;
}
