/*  drv_otlp_syslog — what a receiver:syslog record becomes in a LogRecord
    besides its body (its message) and attributes (its other fields):
    time_unix_nano from its RFC 3339 timestamp, severity_number and
    severity_text from its severity, as OpenTelemetry's log data model
    maps syslog (Emergency FATAL, Alert ERROR3, Critical ERROR2, Error
    ERROR, Warning WARN, Notice INFO2, Informational INFO, Debug DEBUG). A
    record is taken as syslog's by its format (rfc5424 or rfc3164); fields
    it carries itself (time_unix_nano, severity_number) win. */
#include "drv_otlp_build_internal.h"

#include <ctype.h>
#include <string.h>
#include <time.h>

static bool s_is(const msgpack_object *o, const char *text)
{
    size_t len = strlen(text);
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == len && !memcmp(o->via.str.ptr, text, len);
}

//  Reads n digits at *p; -1 when they are not there.
static int s_digits(const char **p, const char *end, int n)
{
    int value = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (*p >= end || !isdigit((unsigned char)**p)) {
            return -1;
        }
        value = value * 10 + (**p - '0');
    }
    return value;
}

//  "2026-11-24T13:11:35.084Z" or "...T13:11:35+02:00" as ns since the
//  epoch; 0 when it is not RFC 3339.
static uint64_t s_rfc3339(const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    struct tm tm = {0};
    int year = s_digits(&p, end, 4);
    int ok = year >= 1970 && p < end && *p++ == '-';
    tm.tm_mon = s_digits(&p, end, 2) - 1;
    ok &= p < end && *p++ == '-';
    tm.tm_mday = s_digits(&p, end, 2);
    ok &= p < end && (*p == 'T' || *p == 't' || *p == ' ');
    p++;
    tm.tm_hour = s_digits(&p, end, 2);
    ok &= p < end && *p++ == ':';
    tm.tm_min = s_digits(&p, end, 2);
    ok &= p < end && *p++ == ':';
    tm.tm_sec = s_digits(&p, end, 2);
    if (!ok || tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour < 0 ||
        tm.tm_hour > 23 || tm.tm_min < 0 || tm.tm_min > 59 || tm.tm_sec < 0 || tm.tm_sec > 60) {
        return 0;
    }
    tm.tm_year = year - 1900;
    uint64_t nanos = 0;
    if (p < end && *p == '.') {
        p++;
        uint64_t scale = 100000000;
        const char *first = p;
        for (; p < end && isdigit((unsigned char)*p); p++) {
            nanos += scale * (uint64_t)(*p - '0');
            scale /= 10;
        }
        if (p == first) {
            return 0;
        }
    }
    int64_t offset = 0;
    if (p < end && (*p == 'Z' || *p == 'z')) {
        p++;
    } else if (p < end && (*p == '+' || *p == '-')) {
        int sign = *p++ == '-' ? -1 : 1;
        int hours = s_digits(&p, end, 2);
        int colon = p < end && *p++ == ':';
        int minutes = s_digits(&p, end, 2);
        if (hours < 0 || hours > 23 || !colon || minutes < 0 || minutes > 59) {
            return 0;
        }
        offset = sign * (hours * 3600 + minutes * 60);
    } else {
        return 0;
    }
    if (p != end) {
        return 0;
    }
    int64_t secs = (int64_t)timegm(&tm) - offset;
    return secs < 0 ? 0 : (uint64_t)secs * 1000000000ULL + nanos;
}

void drv_otlp_syslog_fill(build_t *b, const msgpack_object *record, otlp_log_t *log)
{
    const msgpack_object *format = drv_otlp_get(record, "format");
    if (!s_is(format, "rfc5424") && !s_is(format, "rfc3164")) {
        return;
    }
    const msgpack_object *stamp = drv_otlp_get(record, "timestamp");
    if (log->time_unix_nano == 0 && stamp && stamp->type == MSGPACK_OBJECT_STR) {
        log->time_unix_nano = s_rfc3339(stamp->via.str.ptr, stamp->via.str.size);
    }
    const msgpack_object *severity = drv_otlp_get(record, "severity");
    if (log->severity_number == 0 && severity && severity->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
        severity->via.u64 <= 7) {
        const char *name;
        log->severity_number = drv_otlp_syslog_severity((unsigned)severity->via.u64, &name);
        if (!log->severity_text || !log->severity_text[0]) {
            msgpack_object text = {.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)strlen(name), name}};
            log->severity_text = drv_otlp_string_of(b, &text);
        }
    }
}

int drv_otlp_syslog_severity(unsigned severity, const char **name)
{
    static const int numbers[] = {21, 19, 18, 17, 13, 10, 9, 5};
    static const char *names[] = {"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"};
    severity = severity > 7 ? 7 : severity;
    *name = names[severity];
    return numbers[severity];
}
