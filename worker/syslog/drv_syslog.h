/*  drv_syslog — one syslog message (a UDP datagram, or a line or an
    octet-counted frame of a TCP stream) into a record, as docs/operations.md says:

      {facility, severity, timestamp, hostname, app_name, procid, msgid,
       structured_data: {id: {param: value}}, message, format}

    format is "rfc5424" (<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD MSG),
    "rfc3164" (<PRI>Mmm dd hh:mm:ss HOST TAG[PID]: MSG), or "raw" when the
    text is neither: the whole of it in message, every other field null.
    Pure: no sockets, no clock but the one given (RFC 3164 has no year). */
#ifndef DRV_SYSLOG_H
#define DRV_SYSLOG_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { DRV_SYSLOG_RFC5424 = 0, DRV_SYSLOG_RFC3164, DRV_SYSLOG_RAW } drv_syslog_format_t;

//  A slice of the input; len 0 with p NULL: absent (null in the record).
typedef struct {
    const char *p;
    size_t len;
} drv_syslog_span_t;

typedef struct {
    drv_syslog_format_t format;
    int facility, severity; // -1: absent (raw)
    char timestamp[40];     // RFC 3339, "" when absent
    drv_syslog_span_t hostname, app_name, procid, msgid;
    drv_syslog_span_t structured_data; // RFC 5424's SD, "[...]..." as sent (absent: "-" or none)
    drv_syslog_span_t message;
    int64_t observed_ns; // when it was taken (the receiver sets it): observed_time_unix_nano; 0: left out
} drv_syslog_msg_t;

//  Parses text (len bytes; trailing CR, LF and NUL are ignored). now_ms is
//  the wall clock, for the year an RFC 3164 timestamp leaves out. Never
//  fails: what parses as neither format is raw.
void drv_syslog_parse(const char *text, size_t len, int64_t now_ms, drv_syslog_msg_t *msg);

//  Packs msg as the record map. Strings that are not UTF-8 get U+FFFD for
//  each bad sequence; structured data keeps the first of a repeated SD-ID or
//  param name (a record's keys are unique). Returns 0, -1 when out of memory.
int drv_syslog_pack(const drv_syslog_msg_t *msg, msgpack_packer *pk);
//  The same record as an object built in zone (its strings copied there:
//  the message's buffer may be reused), as receiver:syslog emits it.
int drv_syslog_object(const drv_syslog_msg_t *msg, msgpack_zone *zone, msgpack_object *out);

const char *drv_syslog_format_name(drv_syslog_format_t format);

#endif
