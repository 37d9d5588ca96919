/*  drv_syslog_frame — syslog messages out of a TCP stream (RFC 6587): octet
    counting ("MSG-LEN SP MSG") or non-transparent framing (one message per
    line), told apart per connection by its first byte, as the RFC says: a
    digit starts a count, anything else ("<") a line. Pure. */
#ifndef DRV_SYSLOG_FRAME_H
#define DRV_SYSLOG_FRAME_H

#include <stdbool.h>
#include <stddef.h>

#define DRV_SYSLOG_FRAME_MAX 65536 // a longer message is cut there (a line: the rest is skipped)

typedef enum { DRV_FRAMING_UNKNOWN = 0, DRV_FRAMING_OCTETS, DRV_FRAMING_LINES } drv_framing_t;

typedef struct {
    drv_framing_t framing;
    bool skipping; // a line longer than the limit: its rest is dropped up to the next LF
} drv_syslog_framer_t;

//  The next message in buf[0..len): returns true with *msg / *msg_len (a
//  slice of buf) and *used (bytes consumed, the frame's header and LF
//  included), or false when buf holds no whole message yet (*used may still
//  be > 0: bytes to drop). A count that is not one (no space after at most
//  9 digits, or over the limit) turns the connection to line framing.
bool drv_syslog_frame_next(drv_syslog_framer_t *f, const char *buf, size_t len, const char **msg, size_t *msg_len,
                           size_t *used);

#endif
