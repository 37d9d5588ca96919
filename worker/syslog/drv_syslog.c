/*  drv_syslog — see drv_syslog.h. RFC 5424 section 6 and RFC 3164 section 4,
    read leniently where real senders differ (an RFC 3164 line without a
    tag, a day padded with a space) and strictly where a wrong guess would
    put text in the wrong field (a 5424 header token, the SD syntax). */
#define _DEFAULT_SOURCE // tm_gmtoff
#include "drv_syslog.h"

#include "drover/drv_utf8.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SD_ELEMENTS 32 // a message's SD elements read into the record (more are kept in none)
#define MAX_SD_PARAMS 64   // params of one element

typedef struct {
    const char *p, *end;
} cursor_t;

static bool s_printable(char c)
{
    return c >= 33 && c <= 126;
}

//  One header token of printable ASCII up to a space (or the end), at most
//  max bytes; "-" is absent. False when there is none.
static bool s_token(cursor_t *c, size_t max, drv_syslog_span_t *out)
{
    const char *start = c->p;
    while (c->p < c->end && s_printable(*c->p)) {
        c->p++;
    }
    size_t len = (size_t)(c->p - start);
    if (len == 0 || len > max) {
        return false;
    }
    *out = len == 1 && *start == '-' ? (drv_syslog_span_t){NULL, 0} : (drv_syslog_span_t){start, len};
    return true;
}

static bool s_space(cursor_t *c)
{
    if (c->p < c->end && *c->p == ' ') {
        c->p++;
        return true;
    }
    return false;
}

//  "<PRI>" with PRI 0..191 and no leading zero but "0" itself.
static bool s_pri(cursor_t *c, int *pri)
{
    if (c->p >= c->end || *c->p != '<') {
        return false;
    }
    const char *d = c->p + 1;
    int value = 0, digits = 0;
    while (d < c->end && *d >= '0' && *d <= '9' && digits < 4) {
        value = value * 10 + (*d - '0');
        d++, digits++;
    }
    if (digits == 0 || digits > 3 || value > 191 || (digits > 1 && c->p[1] == '0') || d >= c->end || *d != '>') {
        return false;
    }
    *pri = value;
    c->p = d + 1;
    return true;
}

//  One SD-ELEMENT, "[id name="value" ...]": its end, or NULL if malformed.
static const char *s_sd_element(const char *p, const char *end)
{
    if (p >= end || *p != '[') {
        return NULL;
    }
    p++;
    const char *id = p;
    while (p < end && s_printable(*p) && *p != '=' && *p != ']' && *p != '"') {
        p++;
    }
    if (p == id || p - id > 32) {
        return NULL;
    }
    while (p < end && *p == ' ') {
        p++;
        const char *name = p;
        while (p < end && s_printable(*p) && *p != '=' && *p != ']' && *p != '"') {
            p++;
        }
        if (p == name || p - name > 32 || p + 1 >= end || p[0] != '=' || p[1] != '"') {
            return NULL;
        }
        for (p += 2; p < end && *p != '"'; p++) {
            if (*p == '\\' && p + 1 < end) {
                p++; // \" \\ \] (and any other escaped byte, kept as written)
            }
        }
        if (p >= end) {
            return NULL;
        }
        p++; // closing quote
    }
    return p < end && *p == ']' ? p + 1 : NULL;
}

static bool s_rfc3339(const drv_syslog_span_t *t)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:dd";
    if (t->len < sizeof shape - 1 || t->len > 39) {
        return false;
    }
    for (size_t i = 0; i < sizeof shape - 1; i++) {
        bool ok = shape[i] == 'd' ? t->p[i] >= '0' && t->p[i] <= '9' : t->p[i] == shape[i];
        if (!ok) {
            return false;
        }
    }
    return true;
}

static bool s_parse_5424(cursor_t c, drv_syslog_msg_t *msg)
{
    drv_syslog_span_t stamp;
    if (!(s_token(&c, 39, &stamp) && s_space(&c) && s_token(&c, 255, &msg->hostname) && s_space(&c) &&
          s_token(&c, 48, &msg->app_name) && s_space(&c) && s_token(&c, 128, &msg->procid) && s_space(&c) &&
          s_token(&c, 32, &msg->msgid) && s_space(&c))) {
        return false;
    }
    if (stamp.p && !s_rfc3339(&stamp)) {
        return false;
    }
    if (stamp.p) {
        memcpy(msg->timestamp, stamp.p, stamp.len);
        msg->timestamp[stamp.len] = 0;
    }
    if (c.p < c.end && *c.p == '-') {
        c.p++;
    } else {
        const char *start = c.p, *next;
        while ((next = s_sd_element(c.p, c.end)) != NULL) {
            c.p = next;
        }
        if (c.p == start) {
            return false;
        }
        msg->structured_data = (drv_syslog_span_t){start, (size_t)(c.p - start)};
    }
    if (c.p < c.end && !s_space(&c)) {
        return false; // SD must be followed by a space and the message, or end
    }
    if (c.end - c.p >= 3 && !memcmp(c.p, "\xEF\xBB\xBF", 3)) {
        c.p += 3; // the BOM that says "UTF-8"
    }
    msg->message = c.p < c.end ? (drv_syslog_span_t){c.p, (size_t)(c.end - c.p)} : (drv_syslog_span_t){NULL, 0};
    msg->format = DRV_SYSLOG_RFC5424;
    return true;
}

//  Two digits at p (the first may be a space when pad), or -1.
static int s_two(const char *p, bool pad)
{
    bool first = (p[0] >= '0' && p[0] <= '9') || (pad && p[0] == ' ');
    if (!first || p[1] < '0' || p[1] > '9') {
        return -1;
    }
    return (p[0] == ' ' ? 0 : (p[0] - '0') * 10) + (p[1] - '0');
}

//  "Mmm dd hh:mm:ss" (day padded with a space or a zero) as RFC 3339 in
//  local time, in the year that puts it closest before now (plus a day).
static bool s_3164_time(const char *p, int64_t now_ms, char *out, size_t outlen)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    int month = -1;
    for (int m = 0; m < 12; m++) {
        if (!memcmp(p, months + 3 * m, 3)) {
            month = m;
        }
    }
    int day = s_two(p + 4, true), hour = s_two(p + 7, false), min = s_two(p + 10, false), sec = s_two(p + 13, false);
    if (month < 0 || p[3] != ' ' || p[6] != ' ' || p[9] != ':' || p[12] != ':' || p[15] != ' ' || day < 1 || day > 31 ||
        hour < 0 || hour > 23 || min < 0 || min > 59 || sec < 0 || sec > 60) {
        return false;
    }
    time_t now = (time_t)(now_ms / 1000);
    struct tm local;
    localtime_r(&now, &local);
    struct tm when = {.tm_year = local.tm_year,
                      .tm_mon = month,
                      .tm_mday = day,
                      .tm_hour = hour,
                      .tm_min = min,
                      .tm_sec = sec,
                      .tm_isdst = -1};
    time_t t = mktime(&when);
    if (t > now + 86400) {
        when = (struct tm){.tm_year = local.tm_year - 1,
                           .tm_mon = month,
                           .tm_mday = day,
                           .tm_hour = hour,
                           .tm_min = min,
                           .tm_sec = sec,
                           .tm_isdst = -1};
        mktime(&when); // December's lines read in January
    }
    long off = when.tm_gmtoff / 60;
    char sign = off < 0 ? '-' : '+';
    off = off < 0 ? -off : off;
    snprintf(out, outlen, "%04d-%02d-%02dT%02d:%02d:%02d%c%02ld:%02ld", when.tm_year + 1900, when.tm_mon + 1,
             when.tm_mday, when.tm_hour, when.tm_min, when.tm_sec, sign, off / 60, off % 60);
    return true;
}

static bool s_parse_3164(cursor_t c, int64_t now_ms, drv_syslog_msg_t *msg)
{
    if (c.end - c.p < 16 || !s_3164_time(c.p, now_ms, msg->timestamp, sizeof msg->timestamp)) {
        return false;
    }
    c.p += 16;
    if (!s_token(&c, 255, &msg->hostname)) {
        return false;
    }
    s_space(&c);
    //  TAG[PID]: or TAG: — without either, the rest is all message.
    const char *tag = c.p;
    while (c.p < c.end && s_printable(*c.p) && *c.p != '[' && *c.p != ':' && c.p - tag <= 48) {
        c.p++;
    }
    const char *tag_end = c.p;
    if (c.p < c.end && *c.p == '[') {
        const char *pid = ++c.p;
        while (c.p < c.end && *c.p != ']' && c.p - pid <= 128) {
            c.p++;
        }
        if (c.p < c.end && *c.p == ']' && c.p > pid) {
            msg->procid = (drv_syslog_span_t){pid, (size_t)(c.p - pid)};
            c.p++;
        } else {
            c.p = tag; // not a tag after all
        }
    }
    if (c.p > tag && c.p < c.end && *c.p == ':' && tag_end > tag) {
        msg->app_name = (drv_syslog_span_t){tag, (size_t)(tag_end - tag)};
        c.p++;
        s_space(&c);
    } else {
        msg->procid = (drv_syslog_span_t){NULL, 0};
        c.p = tag;
    }
    msg->message = c.p < c.end ? (drv_syslog_span_t){c.p, (size_t)(c.end - c.p)} : (drv_syslog_span_t){NULL, 0};
    msg->format = DRV_SYSLOG_RFC3164;
    return true;
}

void drv_syslog_parse(const char *text, size_t len, int64_t now_ms, drv_syslog_msg_t *msg)
{
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == 0)) {
        len--;
    }
    memset(msg, 0, sizeof *msg);
    cursor_t c = {text, text + len};
    int pri;
    if (s_pri(&c, &pri)) {
        msg->facility = pri / 8;
        msg->severity = pri % 8;
        bool v1 = c.end - c.p >= 2 && c.p[0] == '1' && c.p[1] == ' ';
        if ((v1 && s_parse_5424((cursor_t){c.p + 2, c.end}, msg)) || (!v1 && s_parse_3164(c, now_ms, msg))) {
            return;
        }
    }
    memset(msg, 0, sizeof *msg);
    msg->format = DRV_SYSLOG_RAW;
    msg->facility = msg->severity = -1;
    msg->message = len ? (drv_syslog_span_t){text, len} : (drv_syslog_span_t){NULL, 0};
}

const char *drv_syslog_format_name(drv_syslog_format_t format)
{
    static const char *names[] = {"rfc5424", "rfc3164", "raw"};
    return format <= DRV_SYSLOG_RAW ? names[format] : "?";
}

//  bytes as a string object in zone (copied: a datagram's or a stream's
//  buffer is reused), U+FFFD for each bad UTF-8 sequence or NUL.
static int s_str(msgpack_zone *zone, const char *p, size_t len, msgpack_object *out)
{
    char *clean = NULL;
    if (!drv_utf8_valid(p, len, false)) {
        if (!(clean = drv_utf8_sanitize(p, len))) {
            return -1;
        }
        p = clean;
        len = strlen(clean);
    }
    char *copy = len ? msgpack_zone_malloc(zone, len) : NULL;
    if (len && copy) {
        memcpy(copy, p, len);
    }
    free(clean);
    if (len && !copy) {
        return -1;
    }
    *out = (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)len, copy ? copy : ""}};
    return 0;
}

static int s_span(msgpack_zone *zone, const drv_syslog_span_t *span, msgpack_object *out)
{
    if (!span->p) {
        *out = (msgpack_object){.type = MSGPACK_OBJECT_NIL};
        return 0;
    }
    return s_str(zone, span->p, span->len, out);
}

typedef struct {
    const char *name;
    size_t name_len;
    const char *value; // escaped, between the quotes
    size_t value_len;
} sd_param_t;

typedef struct {
    const char *id;
    size_t id_len;
    sd_param_t params[MAX_SD_PARAMS];
    size_t count;
} sd_element_t;

static bool s_same(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen == blen && !memcmp(a, b, alen);
}

//  Reads an element the parser already checked; repeated names are skipped.
static void s_read_element(const char *p, sd_element_t *e)
{
    e->id = ++p;
    while (*p != ' ' && *p != ']') {
        p++;
    }
    e->id_len = (size_t)(p - e->id);
    e->count = 0;
    while (*p == ' ') {
        const char *name = ++p;
        while (*p != '=') {
            p++;
        }
        size_t name_len = (size_t)(p - name);
        const char *value = p += 2;
        while (*p != '"') {
            p += *p == '\\' ? 2 : 1;
        }
        bool seen = false;
        for (size_t i = 0; i < e->count; i++) {
            seen |= s_same(e->params[i].name, e->params[i].name_len, name, name_len);
        }
        if (!seen && e->count < MAX_SD_PARAMS) {
            e->params[e->count++] = (sd_param_t){name, name_len, value, (size_t)(p - value)};
        }
        p++;
    }
}

//  A param value without its escapes (\" \\ \]).
static int s_value(msgpack_zone *zone, const sd_param_t *param, msgpack_object *out)
{
    char *plain = malloc(param->value_len + 1);
    if (!plain) {
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < param->value_len; i++) {
        char ch = param->value[i];
        if (ch == '\\' && i + 1 < param->value_len &&
            (param->value[i + 1] == '"' || param->value[i + 1] == '\\' || param->value[i + 1] == ']')) {
            ch = param->value[++i];
        }
        plain[n++] = ch;
    }
    int rc = s_str(zone, plain, n, out);
    free(plain);
    return rc;
}

static msgpack_object s_map(msgpack_object_kv *pairs, size_t n)
{
    return (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {(uint32_t)n, pairs}};
}

static int s_structured_data(msgpack_zone *zone, const drv_syslog_span_t *sd, msgpack_object *out)
{
    if (!sd->p) {
        *out = (msgpack_object){.type = MSGPACK_OBJECT_NIL};
        return 0;
    }
    static __thread sd_element_t elements[MAX_SD_ELEMENTS];
    size_t count = 0;
    const char *end = sd->p + sd->len;
    for (const char *p = sd->p; p && p < end && count < MAX_SD_ELEMENTS; p = s_sd_element(p, end)) {
        sd_element_t *e = &elements[count];
        s_read_element(p, e);
        bool seen = false;
        for (size_t i = 0; i < count; i++) {
            seen |= s_same(elements[i].id, elements[i].id_len, e->id, e->id_len);
        }
        count += !seen;
    }
    msgpack_object_kv *ids = count ? msgpack_zone_malloc(zone, count * sizeof *ids) : NULL;
    if (count && !ids) {
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        size_t n = elements[i].count;
        msgpack_object_kv *params = n ? msgpack_zone_malloc(zone, n * sizeof *params) : NULL;
        if ((n && !params) || s_str(zone, elements[i].id, elements[i].id_len, &ids[i].key) != 0) {
            return -1;
        }
        for (size_t k = 0; k < n; k++) {
            if (s_str(zone, elements[i].params[k].name, elements[i].params[k].name_len, &params[k].key) != 0 ||
                s_value(zone, &elements[i].params[k], &params[k].val) != 0) {
                return -1;
            }
        }
        ids[i].val = s_map(params, n);
    }
    *out = s_map(ids, count);
    return 0;
}

#define KEY(s) ((msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)(sizeof(s) - 1), (s)}})

static msgpack_object s_int_or_nil(int value)
{
    return value < 0 ? (msgpack_object){.type = MSGPACK_OBJECT_NIL}
                     : (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = (uint64_t)value};
}

int drv_syslog_object(const drv_syslog_msg_t *msg, msgpack_zone *zone, msgpack_object *out)
{
    msgpack_object_kv *p = msgpack_zone_malloc(zone, 11 * sizeof *p);
    if (!p) {
        return -1;
    }
    p[0] = (msgpack_object_kv){KEY("facility"), s_int_or_nil(msg->facility)};
    p[1] = (msgpack_object_kv){KEY("severity"), s_int_or_nil(msg->severity)};
    p[2].key = KEY("timestamp");
    drv_syslog_span_t stamp = {msg->timestamp[0] ? msg->timestamp : NULL, strlen(msg->timestamp)};
    int rc = s_span(zone, &stamp, &p[2].val);
    p[3].key = KEY("hostname");
    rc |= s_span(zone, &msg->hostname, &p[3].val);
    p[4].key = KEY("app_name");
    rc |= s_span(zone, &msg->app_name, &p[4].val);
    p[5].key = KEY("procid");
    rc |= s_span(zone, &msg->procid, &p[5].val);
    p[6].key = KEY("msgid");
    rc |= s_span(zone, &msg->msgid, &p[6].val);
    p[7].key = KEY("structured_data");
    rc |= s_structured_data(zone, &msg->structured_data, &p[7].val);
    p[8].key = KEY("message");
    rc |= s_span(zone, &msg->message, &p[8].val);
    const char *format = drv_syslog_format_name(msg->format);
    p[9] =
        (msgpack_object_kv){KEY("format"), {.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)strlen(format), format}}};
    size_t n = 10;
    if (msg->observed_ns > 0) {
        p[n].key = KEY("observed_time_unix_nano");
        p[n++].val = (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = (uint64_t)msg->observed_ns};
    }
    *out = s_map(p, n);
    return rc ? -1 : 0;
}

int drv_syslog_pack(const drv_syslog_msg_t *msg, msgpack_packer *pk)
{
    msgpack_zone zone;
    if (!msgpack_zone_init(&zone, 1024)) {
        return -1;
    }
    msgpack_object record;
    int rc = drv_syslog_object(msg, &zone, &record);
    rc = rc ? rc : msgpack_pack_object(pk, record) ? -1 : 0;
    msgpack_zone_destroy(&zone);
    return rc;
}
