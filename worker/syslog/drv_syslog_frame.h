/*  drv_syslog_frame — syslog messages out of a TCP stream (RFC 6587): octet
    counting ("MSG-LEN SP MSG") or non-transparent framing (one message per
    line), told apart per connection by its first byte, as the RFC says: a
    digit starts a count, anything else ("<") a line. A message longer than
    the framer's max is never split nor merged with the next: it is refused,
    and the connection with it (a stream cannot be resynchronised after a
    frame it did not read). Pure. */
#ifndef DRV_SYSLOG_FRAME_H
#define DRV_SYSLOG_FRAME_H

#include "drover/drv_limits.h" // DRV_SYSLOG_FRAME_LIMIT

#include <stdbool.h>
#include <stddef.h>

#define DRV_SYSLOG_FRAME_MAX 65536 // receiver:syslog's max_message_bytes by default

typedef enum { DRV_FRAMING_UNKNOWN = 0, DRV_FRAMING_OCTETS, DRV_FRAMING_LINES } drv_framing_t;

typedef struct {
    drv_framing_t framing;
    size_t max; // the longest message taken (0: DRV_SYSLOG_FRAME_MAX)
} drv_syslog_framer_t;

typedef enum {
    DRV_FRAME_MORE = 0, // no whole message yet
    DRV_FRAME_MESSAGE,  // one message: *msg, *msg_len, and *used bytes consumed
    DRV_FRAME_TOO_LONG, // longer than max: *msg_len says how long (a line: max + 1, all that is known)
} drv_frame_t;

//  The next message in buf[0..len), with *used the bytes it took (the
//  frame's header and LF included; 0 unless a message). A count that is
//  not one (no space after at most 9 digits, or 0) turns the connection to
//  line framing.
drv_frame_t drv_syslog_frame_next(drv_syslog_framer_t *f, const char *buf, size_t len, const char **msg,
                                  size_t *msg_len, size_t *used);

#endif
